import { contend, type ContendMessage, type Mode } from '../contention/exclusion-contender.js';

/** Child-process side of the mutual-exclusion test: argv = url mode name worker count options-json. */
const [url = '', mode = 'mutex', name = '', worker = '0', count = '0', options = '{}'] = process.argv.slice(2);
let pending: (() => void) | undefined;
process.on('message', () => pending?.());

function report(message: ContendMessage): Promise<void> {
  return new Promise((resolve) => {
    pending = resolve;
    process.send?.(message);
  });
}

contend(url, JSON.parse(options) as object, mode as Mode, name, Number(worker), Number(count), report).then(
  () => process.disconnect(),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

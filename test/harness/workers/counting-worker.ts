import { contendCounting, type CountingRun, type CountMessage } from '../contention/counting-contender.js';

/** Child-process side of the Semaphore and MultiLock checks: argv = run-json worker. */
const [run = '{}', worker = '0'] = process.argv.slice(2);
let pending: (() => void) | undefined;
process.on('message', () => pending?.());

function report(message: CountMessage): Promise<void> {
  return new Promise((resolve) => {
    pending = resolve;
    process.send?.(message);
  });
}

contendCounting(JSON.parse(run) as CountingRun, Number(worker), report).then(
  () => process.disconnect(),
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

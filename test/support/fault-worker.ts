import { contendThroughFaults } from './fault-contend.js';

/** Child-process side of the fault tests: argv = url worker count holdMs options-json. */
const [url = '', worker = '0', count = '0', holdMs = '0', options = '{}'] = process.argv.slice(2);
contendThroughFaults(url, JSON.parse(options) as object, Number(worker), Number(count), Number(holdMs), (interval) =>
  process.send?.({ type: 'interval', interval }),
).then(
  (summary) => {
    process.send?.({ type: 'done', ...summary });
    process.disconnect();
  },
  (error: unknown) => {
    console.error(error);
    process.exit(1);
  },
);

import { contendThroughFaults, type ContendPlan } from './fault-contend.js';

/**
 * Child-process side of the fault tests, one of a pool that serves several runs: it says 'ready', then
 * `{ type: 'run', plan }` starts a run (answered with 'done' and the sessions it opened), 'stop' ends
 * the run after the current hold, and 'exit' lets the process end.
 */
type Command = { type: 'run'; plan: ContendPlan } | { type: 'stop' } | { type: 'exit' };

let stop = false;
process.on('message', (command: Command) => {
  if (command.type === 'stop') stop = true;
  else if (command.type === 'exit') process.disconnect();
  else {
    stop = false;
    contendThroughFaults(command.plan, (interval) => process.send?.({ type: 'interval', interval }), () => stop).then(
      (summary) => process.send?.({ type: 'done', ...summary }),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  }
});
process.send?.({ type: 'ready' });

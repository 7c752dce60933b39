import type { BatonSession } from '../../src/session.js';
import { contendThroughFaults, expireSession, type ContendPlan } from './fault-contend.js';

/**
 * Child-process side of the fault tests, one of a pool that serves several runs: it says 'ready', then
 * `{ type: 'run', plan }` starts a run (answered with 'done' and the sessions it opened), 'stop' ends
 * the run after the current hold, 'expire' ends the current session from the server side (answered
 * with 'expired'), 'linger' keeps the current hold going until its signal aborts or 'linger' is
 * turned off, and 'exit' lets the process end.
 */
type Command = { type: 'run'; plan: ContendPlan } | { type: 'stop' } | { type: 'expire' } | { type: 'linger'; on: boolean } | { type: 'exit' };

let stop = false;
let lingering = false;
let exiting = false;
// Without the test process (it died, or was stopped) nobody reads the reports: end at once.
process.on('disconnect', () => exiting || process.exit(1));
let plan: ContendPlan | undefined;
let current: BatonSession | undefined;
/** Sessions this process was told to end, and when: marked before the server acts, so no hold of theirs is missed. */
const forced = new Map<string, bigint>();

async function expire(): Promise<string | undefined> {
  const session = current;
  if (plan === undefined || session === undefined || session.state === 'lost' || session.state === 'closed') return undefined;
  // Kept even if the request fails (the server may have acted all the same): it only ever excuses
  // the hold that was in progress when it was asked for (see fault-contend.ts).
  forced.set(session.id, process.hrtime.bigint());
  await expireSession(plan, session);
  return session.id;
}

process.on('message', (command: Command) => {
  if (command.type === 'stop') stop = true;
  else if (command.type === 'linger') lingering = command.on;
  else if (command.type === 'exit') {
    exiting = true;
    process.disconnect();
  }
  else if (command.type === 'expire') {
    expire().then(
      (session) => process.send?.({ type: 'expired', session }),
      (error: unknown) => process.send?.({ type: 'expired', error: String(error) }),
    );
  } else {
    stop = false;
    plan = command.plan;
    const control = { stopped: () => stop, opened: (session: BatonSession) => (current = session), forcedAt: (id: string) => forced.get(id), lingering: () => lingering };
    contendThroughFaults(command.plan, (event) => process.send?.(event), control).then(
      (summary) => process.send?.({ type: 'done', ...summary }),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  }
});
process.send?.({ type: 'ready' });

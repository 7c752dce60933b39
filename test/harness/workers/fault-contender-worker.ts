import type { Session } from '../../../recipes/contract.js';
import { type ContendPlan, contendThroughFaults, expireSession, type Forced } from '../faults/fault-contender.js';

/**
 * Child-process side of the fault tests, one of a pool that serves several runs: it says 'ready', then
 * `{ type: 'run', plan }` starts a run (answered with 'done' and the sessions it opened), 'stop' ends
 * the run after the current hold, 'expire' ends the current session from the server side (answered
 * with 'expired'), 'linger' keeps the current hold going until its signal aborts or 'linger' is
 * turned off, and 'exit' lets the process end.
 */
type Command =
  | { type: 'run'; plan: ContendPlan }
  | { type: 'stop' }
  | { type: 'expire' }
  | { type: 'linger'; on: boolean }
  | { type: 'exit' };

let stop = false;
let lingering = false;
let exiting = false;
// Without the test process (it died, or was stopped) nobody reads the reports: end at once.
process.on('disconnect', () => exiting || process.exit(1));
let plan: ContendPlan | undefined;
let current: Session | undefined;
/**
 * Sessions this process was told to end, when it asked (marked before the server can act, so no hold
 * of theirs is missed) and when the server answered.
 */
const forced = new Map<string, Forced>();

async function expire(): Promise<string | undefined> {
  const session = current;
  if (plan === undefined || session === undefined || session.state === 'lost' || session.state === 'closed')
    return undefined;
  const asked = process.hrtime.bigint();
  forced.set(session.id, { asked });
  try {
    await expireSession(plan, session);
  } catch (error) {
    // The server may still act on a request that failed here (already on its way to the leader), but
    // not for long: the leader applies it or it is dropped with a change of leader. Holds of this
    // session granted within three session timeouts of the failure are excused from their grant on
    // (see excusedFrom in fault-contend.ts), later ones are checked in full.
    forced.set(session.id, { asked, answered: process.hrtime.bigint() + BigInt(Math.round(session.timeoutMs * 3e6)) });
    throw error;
  }
  forced.set(session.id, { asked, answered: process.hrtime.bigint() });
  return session.id;
}

/** Reports to the test process while the channel is open (after a disconnect, the process is ending). */
function tell(message: object): void {
  if (process.connected) process.send?.(message);
}

process.on('message', (command: Command) => {
  if (command.type === 'stop') stop = true;
  else if (command.type === 'linger') lingering = command.on;
  else if (command.type === 'exit') {
    exiting = true;
    process.disconnect();
  } else if (command.type === 'expire') {
    expire().then(
      (session) => tell({ type: 'expired', session }),
      (error: unknown) => tell({ type: 'expired', error: String(error) }),
    );
  } else {
    stop = false;
    plan = command.plan;
    const control = {
      stopped: () => stop,
      opened: (session: Session) => (current = session),
      forced: (id: string) => forced.get(id),
      lingering: () => lingering,
    };
    contendThroughFaults(command.plan, (event) => tell(event), control).then(
      (summary) => tell({ type: 'done', ...summary }),
      (error: unknown) => {
        console.error(error);
        process.exit(1);
      },
    );
  }
});
tell({ type: 'ready' });

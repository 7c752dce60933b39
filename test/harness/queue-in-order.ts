import type { Session } from '../../recipes/contract.js';
import type { LockHandle } from '../../recipes/handle.js';
import { eventually, later } from './wait.js';

/**
 * `count` acquires spread over `sessions`, each started once the one before it shows in the queue
 * (`entries` counts them on the server), so that their FIFO order is known. `already`: the entries
 * queued before the first.
 */
export async function queueInOrder(
  sessions: readonly Session[],
  count: number,
  already: number,
  entries: () => Promise<number>,
  acquire: (session: Session) => Promise<LockHandle>,
): Promise<Promise<LockHandle>[]> {
  const waits: Promise<LockHandle>[] = [];
  for (let i = 0; i < count; i += 1) {
    waits.push(later(acquire(sessions[i % sessions.length]!)));
    const expected = already + i + 1;
    await eventually(`${expected} entries queued`, async () => (await entries()) === expected, 60_000);
  }
  return waits;
}

import { subscribe, unsubscribe } from 'node:diagnostics_channel';

import type { Session } from '../../recipes/contract.js';
import type { LockHandle } from '../../recipes/handle.js';
import type { WaitMessage } from '../../recipes/trace.js';
import { eventually, later } from './wait.js';

const ACQUIRE_START = 'tracing:baton-locks:acquire:start';

/**
 * `count` acquires spread over `sessions`, each started once the one before it shows in the queue
 * (`entries` counts them on the server), so that their FIFO order is known, and has read the listing
 * its enqueue got back (its trace has a `position`), so that no read of the queueing is still under
 * way when the caller starts counting. `already`: the entries queued before the first.
 */
export async function queueInOrder(
  sessions: readonly Session[],
  count: number,
  already: number,
  entries: () => Promise<number>,
  acquire: (session: Session) => Promise<LockHandle>,
): Promise<Promise<LockHandle>[]> {
  const started: WaitMessage[] = [];
  const onStart = (message: unknown): void => void started.push(message as WaitMessage);
  subscribe(ACQUIRE_START, onStart);
  try {
    const waits: Promise<LockHandle>[] = [];
    for (let i = 0; i < count; i += 1) {
      const before = started.length;
      waits.push(later(acquire(sessions[i % sessions.length]!)));
      const message = started[before];
      if (started.length !== before + 1 || message === undefined) throw new Error('the acquire was not traced');
      const expected = already + i + 1;
      await eventually(
        `${expected} entries queued, the last one's listing read`,
        async () => message.position !== undefined && (await entries()) === expected,
        60_000,
      );
    }
    return waits;
  } finally {
    unsubscribe(ACQUIRE_START, onStart);
  }
}

import type { Backend, Session } from '../../recipes/contract.js';
import { internalsOf } from '../../src/session.js';
import { eventually } from './wait.js';

/**
 * What tests reach behind the public API: a session's backend (to list a queue, confirm an entry) and
 * the server entry behind a handle. Kept out of the public types; see `SessionInternals`.
 */
export { entryOf } from '../../recipes/handle.js';
export { internalsOf };

/** The backend (driver) a session talks to. */
export function backendOf(session: Session): Backend {
  return internalsOf(session).backend;
}

/** How many entries the queue `name` holds, as `session` lists it. */
export async function queueLength(session: Session, name: string): Promise<number> {
  return (await backendOf(session).list(name)).length;
}

/**
 * The queue as `session` sees it reaches `length`. A ZooKeeper follower may answer one session's read
 * before it has applied another session's delete (reads are not linearizable across sessions), so the
 * count is given a moment to settle; it must never stay wrong.
 */
export async function expectQueueLength(session: Session, name: string, length: number): Promise<void> {
  await eventually(
    `queue "${name}" holding ${length}`,
    async () => (await queueLength(session, name)) === length,
    2_000,
  );
}

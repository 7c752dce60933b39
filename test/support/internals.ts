import type { Backend, Session } from '../../recipes/contract.js';
import { internalsOf } from '../../src/session.js';

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

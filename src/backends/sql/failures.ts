import { BackendError, BatonError, SessionLostError } from '../../../recipes/errors.js';
import type { FailurePolicy } from '../core.js';

/** What a SQL backend knows of its own failures. */
export interface SqlFailures {
  /** The backend's name in messages (`PostgreSQL`, `MySQL`). */
  readonly title: string;
  retriable(error: unknown): boolean;
  /** The server said the session's lease has run out or its row is gone (baton's SQLSTATE `BT001`). */
  sessionGone(error: unknown): boolean;
  /** The error a refusal of the server's becomes (rights, a misuse), or undefined for any other failure. */
  refusal(error: unknown): Error | undefined;
}

/** How the failures of a session that is a leased row read, for the session `id`. */
export function leaseFailures(id: string, backend: SqlFailures): FailurePolicy {
  const gone = (cause?: unknown): SessionLostError =>
    new SessionLostError(
      `${backend.title} session ${id} is gone (its lease expired or it was closed)`,
      cause === undefined ? undefined : { cause },
    );
  return {
    retriable: (error) => backend.retriable(error),
    sessionGone: (error) => backend.sessionGone(error),
    lostError: gone,
    map(error: unknown): Error {
      if (error instanceof BatonError) return error;
      if (backend.sessionGone(error)) return gone(error);
      return backend.refusal(error) ?? new BackendError(`${backend.title} request failed`, { cause: error });
    },
  };
}

import { AccessDeniedError, BackendError, BatonError } from '../../../recipes/errors.js';
import type { FailurePolicy } from '../core.js';
import { leaseFailures } from '../sql/failures.js';
import { LinkClosedError } from './link.js';

/** The SQLSTATE baton's functions raise when the session's lease has run out or its row is gone. */
export const SESSION_GONE = 'BT001';

/** The SQLSTATE of an enqueue run at another isolation level than READ COMMITTED. */
export const WRONG_ISOLATION = 'BT002';

/** The SQLSTATE of an error the server sent (node-postgres's DatabaseError), if it is one. */
export function sqlState(error: unknown): string | undefined {
  const { code, severity } = (error ?? {}) as { code?: unknown; severity?: unknown };
  return typeof code === 'string' && code.length === 5 && typeof severity === 'string' ? code : undefined;
}

/**
 * A statement to send again: one that failed on the way (the connection broke or was dropped, the
 * server was shutting down or not yet up, the backend was terminated), or a serialisation failure.
 * Everything baton sends is safe to repeat: an enqueue names its entry's key, and finds it if an
 * earlier attempt was applied.
 */
export function retriable(error: unknown): boolean {
  if (error instanceof BatonError || error instanceof LinkClosedError) return false;
  const state = sqlState(error);
  if (state === undefined) return true; // a socket's error, a timeout, "Connection terminated unexpectedly"
  return (
    state.startsWith('08') ||
    state === '57P01' ||
    state === '57P02' ||
    state === '57P03' ||
    state === '40001' ||
    state === '40P01' ||
    state === '53300'
  );
}

/** How PostgreSQL's failures read, for the session `id` in `schema`. */
export function postgresFailures(id: string, schema: string): FailurePolicy {
  return leaseFailures(id, {
    title: 'PostgreSQL',
    retriable,
    sessionGone: (error) => sqlState(error) === SESSION_GONE,
    refusal(error) {
      const state = sqlState(error);
      if (state === WRONG_ISOLATION)
        return new BackendError(`PostgreSQL request refused: ${(error as Error).message} (see docs/postgres.md)`, {
          cause: error,
        });
      if (state === '42501')
        return new AccessDeniedError(
          `PostgreSQL refused the request (permission denied): this role may not use baton's schema ${schema}`,
          { cause: error },
        );
      return undefined;
    },
  });
}

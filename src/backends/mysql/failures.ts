import { AccessDeniedError, BackendError, BatonError, SessionLostError } from '../../../recipes/errors.js';
import type { FailurePolicy } from '../core.js';
import { LinkClosedError } from './link.js';

/** The SQLSTATE baton's procedures signal when the session's lease has run out or its row is gone. */
export const SESSION_GONE = 'BT001';

/** The server's error number of an error it sent (mysql2's `errno` beside a `sqlState`), if it is one. */
export function serverErrno(error: unknown): number | undefined {
  const { errno, sqlState } = (error ?? {}) as { errno?: unknown; sqlState?: unknown };
  return typeof errno === 'number' && typeof sqlState === 'string' ? errno : undefined;
}

/** The SQLSTATE of an error the server sent, if it is one. */
export function sqlStateOf(error: unknown): string | undefined {
  const { sqlState } = (error ?? {}) as { sqlState?: unknown };
  return typeof sqlState === 'string' && serverErrno(error) !== undefined ? sqlState : undefined;
}

/**
 * Server errors after which a statement is sent again: a deadlock or lock wait timeout (the transaction
 * was rolled back), a statement interrupted (`KILL QUERY`), the server shutting down, too many
 * connections, the connection killed or closed by `wait_timeout` (MySQL 8's 4031, MariaDB's 1927).
 */
const RETRIED = new Set([1205, 1213, 1317, 1040, 1053, 1077, 1079, 1927, 2006, 2013, 4031]);

/** Refusals of the user's rights: access to the database, a table, or a procedure. */
const DENIED = new Set([1044, 1045, 1142, 1143, 1370, 1227]);

/**
 * A statement to send again: one that failed on the way (no server errno: the socket broke or the
 * deadline dropped it), or a server error of `RETRIED`. Everything baton sends is safe to repeat: an
 * enqueue names its entry's key and finds it if an earlier attempt was applied.
 */
export function retriable(error: unknown): boolean {
  if (error instanceof BatonError || error instanceof LinkClosedError) return false;
  const errno = serverErrno(error);
  if (errno === undefined) return true;
  return RETRIED.has(errno);
}

/** Whether the server refused the user's rights. */
export function denied(error: unknown): boolean {
  const errno = serverErrno(error);
  return errno !== undefined && DENIED.has(errno);
}

/** How MySQL's failures read, for the session `id`. */
export function mysqlFailures(id: string): FailurePolicy {
  const gone = (cause?: unknown): SessionLostError =>
    new SessionLostError(
      `MySQL session ${id} is gone (its lease expired or it was closed)`,
      cause === undefined ? undefined : { cause },
    );
  return {
    retriable,
    sessionGone: (error) => sqlStateOf(error) === SESSION_GONE,
    lostError: gone,
    map(error: unknown): Error {
      if (error instanceof BatonError) return error;
      if (sqlStateOf(error) === SESSION_GONE) return gone(error);
      if (denied(error))
        return new AccessDeniedError(
          `MySQL refused the request (${(error as Error).message}): this user may not use baton's tables`,
          { cause: error },
        );
      return new BackendError('MySQL request failed', { cause: error });
    },
  };
}

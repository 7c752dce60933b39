import { AccessDeniedError, BatonError } from '../../../recipes/errors.js';
import type { FailurePolicy } from '../core.js';
import { leaseFailures } from '../sql/failures.js';
import { LinkBrokenError, LinkClosedError } from './link.js';

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
 * Server errors after which a statement is sent again, all transient: a lock wait timeout or deadlock
 * (the transaction was rolled back), a statement interrupted (`KILL QUERY`), too many connections (of
 * the server or the user), the server shutting down, the connection killed or closed for inactivity
 * (MariaDB's 1927, MySQL 8's 4031), a network read or write cut short, too many active transactions,
 * and a server read-only for a while (`read_only` or `super_read_only` during a failover: 1290, 1792, 1836).
 */
const RETRIED = new Set([
  1205, 1213, 1317, 1040, 1203, 1053, 1077, 1079, 1927, 4031, 1158, 1159, 1160, 1161, 1637, 1290, 1792, 1836, 2006,
  2013,
]);

/**
 * mysql2's and Node's codes of a connection that failed on the way (no server error): refused, reset,
 * cut, timed out, unreachable, a name not resolved for now, a reply that never came.
 */
const CONNECTION_CODES = new Set([
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENETRESET',
  'ENOTCONN',
  'EAI_AGAIN',
]);

/** Refusals of the user's rights: access to the database, a table, or a procedure. */
const DENIED = new Set([1044, 1045, 1142, 1143, 1370, 1227]);

/**
 * A statement to send again: its connection broke or was dropped on the way (`LinkBrokenError`, a
 * connection error code, an error mysql2 calls fatal), or the server answered with a transient error of `RETRIED`. Nothing else: a
 * refusal (syntax, rights, an unknown column, data too long) or a bug in baton's own code would fail
 * the same way again until the deadline. Everything baton sends is safe to repeat: an enqueue names its
 * entry's key and finds it if an earlier attempt was applied.
 */
export function retriable(error: unknown): boolean {
  if (error instanceof BatonError || error instanceof LinkClosedError) return false;
  if (error instanceof LinkBrokenError) return true;
  const errno = serverErrno(error);
  if (errno !== undefined) return RETRIED.has(errno);
  const { code, fatal } = (error ?? {}) as { code?: unknown; fatal?: unknown };
  // mysql2 marks `fatal` what ended its connection ("Can't add new command when connection is in
  // closed state" carries no code): the next attempt goes on a new connection.
  if (fatal === true) return true;
  return typeof code === 'string' && CONNECTION_CODES.has(code);
}

/** Whether the server refused the user's rights. */
export function denied(error: unknown): boolean {
  const errno = serverErrno(error);
  return errno !== undefined && DENIED.has(errno);
}

/** How MySQL's failures read, for the session `id`. */
export function mysqlFailures(id: string): FailurePolicy {
  return leaseFailures(id, {
    title: 'MySQL',
    retriable,
    sessionGone: (error) => sqlStateOf(error) === SESSION_GONE,
    refusal: (error) =>
      denied(error)
        ? new AccessDeniedError(
            `MySQL refused the request (${(error as Error).message}): this user may not use baton's tables`,
            { cause: error },
          )
        : undefined,
  });
}

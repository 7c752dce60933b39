import { describe, expect, it } from 'vitest';

import { AccessDeniedError, BackendError, LockTimeoutError, SessionLostError } from '../../recipes/errors.js';
import { mysqlFailures, retriable } from '../../src/backends/mysql/failures.js';
import { LinkBrokenError, LinkClosedError } from '../../src/backends/mysql/link.js';

/** An error as mysql2 makes it from a server's error packet: `code`, `errno`, `sqlState`, `sqlMessage`. */
function serverError(code: string, errno: number, sqlState: string, fatal = false): Error {
  return Object.assign(new Error(code), { code, errno, sqlState, sqlMessage: code, fatal });
}

/** An error of the socket, as Node and mysql2 make it (no server errno: `errno` is the system's, negative). */
function socketError(code: string, errno?: number): Error {
  return Object.assign(new Error(`connect ${code} 127.0.0.1:3306`), { code, fatal: true, errno, syscall: 'connect' });
}

const TRANSIENT: [string, unknown][] = [
  ['a lock wait timeout', serverError('ER_LOCK_WAIT_TIMEOUT', 1205, 'HY000')],
  ['a deadlock', serverError('ER_LOCK_DEADLOCK', 1213, '40001')],
  ['a statement interrupted (KILL QUERY)', serverError('ER_QUERY_INTERRUPTED', 1317, '70100')],
  ['too many connections', serverError('ER_CON_COUNT_ERROR', 1040, '08004', true)],
  ["too many of the user's connections", serverError('ER_TOO_MANY_USER_CONNECTIONS', 1203, '42000', true)],
  ['the server shutting down', serverError('ER_SERVER_SHUTDOWN', 1053, '08S01', true)],
  ['a normal shutdown', serverError('ER_NORMAL_SHUTDOWN', 1077, 'HY000', true)],
  ['MariaDB: the connection killed', serverError('ER_CONNECTION_KILLED', 1927, '70100', true)],
  ['MySQL 8: closed for inactivity', serverError('ER_CLIENT_INTERACTION_TIMEOUT', 4031, 'HY000', true)],
  ['a network read cut short', serverError('ER_NET_READ_ERROR', 1158, '08S01', true)],
  ['a network write cut short', serverError('ER_NET_ERROR_ON_WRITE', 1160, '08S01', true)],
  ['read-only during a failover', serverError('ER_OPTION_PREVENTS_STATEMENT', 1290, 'HY000')],
  ['a read-only transaction', serverError('ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION', 1792, '25006')],
  ['read-only mode', serverError('ER_READ_ONLY_MODE', 1836, 'HY000')],
  ['too many active transactions', serverError('ER_TOO_MANY_CONCURRENT_TRXS', 1637, 'HY000')],
  [
    'the connection lost (mysql2)',
    Object.assign(new Error('Connection lost'), { code: 'PROTOCOL_CONNECTION_LOST', fatal: true }),
  ],
  [
    'a reply that never came (mysql2)',
    Object.assign(new Error('timeout'), { code: 'PROTOCOL_SEQUENCE_TIMEOUT', fatal: true }),
  ],
  ['connection refused', socketError('ECONNREFUSED', -111)],
  ['connection reset', socketError('ECONNRESET', -104)],
  ['a broken pipe', socketError('EPIPE', -32)],
  ['a socket timeout', socketError('ETIMEDOUT', -110)],
  ['a host unreachable', socketError('EHOSTUNREACH', -113)],
  ['a name not resolved for now', socketError('EAI_AGAIN', -3001)],
  [
    'a name not found mid-session (mysql2 calls it fatal; the first connect does not retry it)',
    socketError('ENOTFOUND', -3008),
  ],
  [
    'a statement on a connection mysql2 already closed',
    Object.assign(new Error("Can't add new command when connection is in closed state"), { fatal: true }),
  ],
  ['a connection dropped at its deadline', new LinkBrokenError(new Error('no answer from MySQL within 666 ms'))],
  ['a connection that ended', new LinkBrokenError(new Error('the connection to MySQL ended'))],
];

const PERMANENT: [string, unknown][] = [
  ['a syntax error', serverError('ER_PARSE_ERROR', 1064, '42000')],
  ['access denied', serverError('ER_ACCESS_DENIED_ERROR', 1045, '28000', true)],
  ['no rights on the database', serverError('ER_DBACCESS_DENIED_ERROR', 1044, '42000')],
  ['no rights on a procedure', serverError('ER_PROCACCESS_DENIED_ERROR', 1370, '42000')],
  ['an unknown column', serverError('ER_BAD_FIELD_ERROR', 1054, '42S22')],
  ['an unknown table', serverError('ER_NO_SUCH_TABLE', 1146, '42S02')],
  ['an unknown procedure', serverError('ER_SP_DOES_NOT_EXIST', 1305, '42000')],
  ['data too long', serverError('ER_DATA_TOO_LONG', 1406, '22001')],
  ['a duplicate key', serverError('ER_DUP_ENTRY', 1062, '23000')],
  ['a wrong argument count', serverError('ER_SP_WRONG_NO_OF_ARGS', 1318, '42000')],
  ["baton's procedures: the session is gone", serverError('ER_SIGNAL_EXCEPTION', 1644, 'BT001')],
  ['an unknown database', serverError('ER_BAD_DB_ERROR', 1049, '42000', true)],
  ['a bug in our code (TypeError)', new TypeError("Cannot read properties of undefined (reading 'got')")],
  ['a bug in our code (RangeError)', new RangeError('Invalid array length')],
  ['a plain Error', new Error('something else')],
  ['a thrown string', 'oops'],
  ['undefined', undefined],
  ['a closed link', new LinkClosedError()],
  ["baton's own error", new LockTimeoutError('lock "a"', 100)],
];

describe('MySQL: retriable(), the errors after which a statement is sent again', () => {
  it.each(TRANSIENT)('retries %s', (_what, error) => {
    expect(retriable(error)).toBe(true);
  });

  it.each(PERMANENT)('does not retry %s', (_what, error) => {
    expect(retriable(error)).toBe(false);
  });

  it('maps what it does not retry onto typed errors', () => {
    const failures = mysqlFailures('my-1');
    expect(failures.map(serverError('ER_ACCESS_DENIED_ERROR', 1045, '28000'))).toBeInstanceOf(AccessDeniedError);
    expect(failures.map(serverError('ER_SIGNAL_EXCEPTION', 1644, 'BT001'))).toBeInstanceOf(SessionLostError);
    expect(failures.map(new TypeError('bug'))).toBeInstanceOf(BackendError);
  });
});

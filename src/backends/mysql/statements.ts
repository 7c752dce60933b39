/** The statements the driver sends on its main connection (each is one round trip). */
export const STATEMENTS = {
  enqueue: 'CALL baton_enqueue(?, ?, ?, ?, ?, ?, ?, ?)',
  list: 'CALL baton_list(?, ?)',
  withdraw: 'CALL baton_withdraw(?, ?, ?, ?)',
  // By key, unique in the database: a token is unique only within its queue.
  live:
    'SELECT e.`key` FROM baton_entries e JOIN baton_sessions o ON o.id = e.session AND o.expires_at > SYSDATE(6)' +
    ' WHERE e.`key` IN (?)',
  read:
    'SELECT e.data FROM baton_entries e JOIN baton_sessions o ON o.id = e.session AND o.expires_at > SYSDATE(6)' +
    ' WHERE e.`key` = ? AND e.token = ?',
  describe:
    'SELECT e.token, e.`key`, e.position AS queue_position, e.kind, e.session, e.data,' +
    ' UNIX_TIMESTAMP(e.created_at) * 1000 AS created_ms,' +
    ' TIMESTAMPDIFF(MICROSECOND, SYSDATE(6), o.expires_at) / 1000 AS expires_in_ms' +
    ' FROM baton_entries e JOIN baton_sessions o ON o.id = e.session AND o.expires_at > SYSDATE(6)' +
    ' WHERE e.namespace = ? AND e.queue = ? ORDER BY e.position, e.token',
  confirm:
    'SELECT e.`key` FROM baton_entries e JOIN baton_sessions o ON o.id = e.session AND o.expires_at > SYSDATE(6)' +
    ' WHERE e.`key` = ? AND e.session = ?',
  // An expired lease is never renewed: its session stays lost (the WHERE finds no row).
  renew:
    'UPDATE baton_sessions SET expires_at = SYSDATE(6) + INTERVAL (ttl_ms * 1000) MICROSECOND' +
    ' WHERE id = ? AND expires_at > SYSDATE(6)',
  close: 'DELETE FROM baton_sessions WHERE id = ?',
} as const;

/**
 * Takes the wake-up names of these entries (a new main connection holds none), one statement: 1 per
 * name held by this connection after it, 0 where another connection holds it. A name this connection
 * holds already is not taken twice (GET_LOCK counts, and the withdraw releases once).
 */
export function armStatement(count: number): string {
  const one = (i: number): string => `IF(IS_USED_LOCK(?) <=> CONNECTION_ID(), 1, GET_LOCK(?, 0)) AS a${i}`;
  return `SELECT ${Array.from({ length: count }, (_, i) => one(i)).join(', ')}`;
}

/** The connection's own thread id and client address, as the server lists them (a user sees its own threads). */
export const OWN_THREAD_STATEMENT =
  'SELECT ID AS id, HOST AS host FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()';

/** The id and client address of those of `count` server threads still connected (a user sees its own). */
export function threadsStatement(count: number): string {
  const marks = Array.from({ length: count }, () => '?').join(', ');
  return `SELECT ID AS id, HOST AS host FROM information_schema.PROCESSLIST WHERE ID IN (${marks})`;
}

/** Ends a former connection of this session's by its server id (MySQL's unknown-thread error is 1094). */
export function killStatement(thread: number): string {
  return `KILL ${Math.trunc(thread)}`;
}

import { mysqlCounters, mysqlWatches } from 'baton-locks/testing';
import mysql2 from 'mysql2/promise';
import { inject } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { mysqlSessionIdOf, mysqlSessionRowOf } from '../../../src/backends/mysql/driver.js';
import type { Fixture } from './fixture.js';

/** The lease of the contract suites' sessions: expiry tests then take seconds. */
export const MYSQL_SESSION_MS = 2_000;

/** The server's URL without any query (baton's parameters are added per test). */
export function mysqlUrl(): string {
  return inject('mysql');
}

/** mysql2's options for a `mysql://` URL of the harness. */
export function connectionOptionsOf(url: string): mysql2.ConnectionOptions {
  const parsed = new URL(url);
  return {
    host: parsed.hostname,
    port: Number(parsed.port || 3306),
    user: decodeURIComponent(parsed.username),
    password: decodeURIComponent(parsed.password),
    database: parsed.pathname.slice(1),
    supportBigNumbers: true,
    bigNumberStrings: true,
  };
}

/** A short-lived connection to the server as the URL's user, for the checks and faults the tests need. */
export async function withMysql<T>(url: string, use: (connection: mysql2.Connection) => Promise<T>): Promise<T> {
  const connection = await mysql2.createConnection(connectionOptionsOf(url));
  try {
    return await use(connection);
  } finally {
    await connection.end().catch(() => undefined);
  }
}

/**
 * What the server is doing, for a failure's message: its connections (id, command, state, statement)
 * and InnoDB's log positions (a commit waits for "flushed up to" to pass its own).
 */
export async function serverStateOf(url: string): Promise<string> {
  return withMysql(url, async (connection) => {
    const [threads] = await connection.query(
      'SELECT ID, COMMAND, TIME, STATE, LEFT(INFO, 60) AS INFO FROM information_schema.PROCESSLIST',
    );
    const [status] = await connection.query('SHOW ENGINE INNODB STATUS');
    const text = String((status as { Status?: string }[])[0]?.Status ?? '');
    const log = text.match(/Log sequence number.*\n.*Log flushed up to.*\n/)?.[0] ?? '';
    return `threads ${JSON.stringify(threads)}; ${log.replace(/\s+/g, ' ').trim()}`;
  }).catch((error: unknown) => `the server did not answer: ${String(error)}`);
}

/** Rows of a table that may not exist yet (no session has created the schema): none. */
async function rowsOf<T>(connection: mysql2.Connection, text: string, values: unknown[]): Promise<T[]> {
  try {
    return (await connection.query(text, values))[0] as T[];
  } catch (error) {
    if ((error as { errno?: number }).errno === 1146) return [];
    throw error;
  }
}

/** `url` with baton's `namespace` added. */
function withNamespace(url: string, namespace: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('namespace', namespace);
  return parsed.toString();
}

export function mysqlFixture(): Fixture {
  return mysqlFixtureOf(mysqlUrl(), 'mysql');
}

/** The same fixture for any server, e.g. one a fault test started for itself. */
export function mysqlFixtureOf(url: string, name: string, sessionTimeoutMs = MYSQL_SESSION_MS): Fixture {
  const alive = 'o.id = e.session AND o.expires_at > SYSDATE(6)';
  return {
    name,
    url: (namespace) => withNamespace(url, namespace),
    options: { sessionTimeoutMs },
    // Live entries, and guarded values (they outlive their writer: one left behind is a leak) as `<queue>#<name>`.
    entries: (namespace) =>
      withMysql(url, async (connection) =>
        (
          await rowsOf<{ key: string }>(
            connection,
            `(SELECT e.\`key\` AS \`key\`, 0 AS k, e.token AS t FROM baton_entries e JOIN baton_sessions o ON ${alive} WHERE e.namespace = ?)` +
              ` UNION ALL (SELECT CONCAT(v.queue, '#', v.name), 1, 0 FROM baton_guarded_values v WHERE v.namespace = ?) ORDER BY k, t, \`key\``,
            [namespace, namespace],
          )
        ).map((row) => row.key),
      ),
    watched: async (namespace) =>
      [...mysqlWatches.keys()]
        .filter((tag) => tag.startsWith(`${namespace}/`))
        .map((tag) => (tag.includes('#') ? tag.slice(tag.indexOf('#') + 1) : tag))
        .sort(),
    notifications: () => mysqlCounters.notifications + mysqlCounters.backstopWakes,
    expire: (session) => expireMysqlSession(url, session),
    removeEntry: (key) =>
      withMysql(
        url,
        async (connection) => void (await connection.query('DELETE FROM baton_entries WHERE `key` = ?', [key])),
      ),
    cleanup: (namespace) =>
      withMysql(url, async (connection) => {
        await rowsOf(connection, 'DELETE FROM baton_entries WHERE namespace = ?', [namespace]);
        await rowsOf(connection, 'DELETE FROM baton_guarded_values WHERE namespace = ?', [namespace]);
      }),
    liveSessions: (ids) =>
      withMysql(url, async (connection) => {
        const rows = ids.map(mysqlSessionRowOf).filter((id) => /^\d+$/.test(id));
        if (rows.length === 0) return [];
        const found = await rowsOf<{ id: string }>(
          connection,
          'SELECT CAST(id AS CHAR) AS id FROM baton_sessions WHERE id IN (?) AND expires_at > SYSDATE(6)',
          [rows],
        );
        return found.map((row) => mysqlSessionIdOf(row.id));
      }),
    crossProcess: true,
    // The heartbeat (every quarter of the lease) finds a removed session; a lost connection by the deadline.
    lossDeadlineMs: sessionTimeoutMs * 3,
  };
}

/** Ends a session from the server side, as an operator deleting its row would: its entries go with it. */
export async function expireMysqlSession(url: string, session: Session): Promise<void> {
  await withMysql(
    url,
    async (connection) =>
      void (await connection.query('DELETE FROM baton_sessions WHERE id = ?', [mysqlSessionRowOf(session.id)])),
  );
}

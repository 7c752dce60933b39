import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import type { ConnectionOptions as TlsOptions } from 'node:tls';

import type { ConnectionOptions } from 'mysql2';

import { AccessDeniedError, BackendError } from '../../../recipes/errors.js';
import { loadPeer } from '../../metrics/peer.js';
import { applySchemaOn, attemptMs, openLeaseSession, type ServerAt } from '../sql/open.js';
import { denied, mysqlFailures, serverErrno } from './failures.js';
import { type CreateConnection, Link, type LinkEvents } from './link.js';
import { SCHEMA_VERSION, schemaStatements } from './schema.js';
import { flavourOf, readServerFacts, type ServerFlavour, serverRefusal } from './server-checks.js';
import type { MysqlUrl } from './url.js';

/** What the MySQL driver is opened with. */
export interface MysqlDriverOptions {
  readonly url: MysqlUrl;
  readonly sessionTimeoutMs: number;
  readonly connectTimeoutMs: number;
  /** Create baton's tables when they are missing (default); false: refuse to connect instead. */
  readonly createSchema: boolean;
  readonly tls: TlsOptions | undefined;
  readonly signal?: AbortSignal | undefined;
}

export { attemptMs } from '../sql/open.js';

/** mysql2, loaded only for mysql URLs (an optional peer dependency). */
export async function loadMysql2(): Promise<CreateConnection> {
  const mysql2 = await loadPeer('mysql2', 'a mysql:// URL', () => import('mysql2'));
  return (mysql2.default ?? mysql2).createConnection;
}

/** The `GET_LOCK` name of an entry: server-wide, so the database is in it; hashed to stay under 64 characters. */
export function lockNameOf(database: string, key: string): string {
  return `baton.${createHash('sha1').update(`${database}/${key}`).digest('hex')}`;
}

/** mysql2's settings for the URL: BIGINTs as strings, no multi-statements, the TLS settings if any. */
export function connectionConfig(url: MysqlUrl, tls: TlsOptions | undefined): ConnectionOptions {
  return {
    host: url.host,
    port: url.port,
    user: url.user,
    password: url.password,
    database: url.database,
    charset: 'utf8mb4',
    supportBigNumbers: true,
    bigNumberStrings: true,
    dateStrings: true,
    multipleStatements: false,
    enableKeepAlive: true,
    ...(tls === undefined ? {} : { ssl: tls as NonNullable<ConnectionOptions['ssl']> }),
  };
}

/**
 * What every connection of baton's is set to first: its character set utf8mb4 both ways (mysql2 asks
 * for it in the handshake, which a server may ignore or an `init_connect` undo: a value outside the
 * server's default would be mangled), autocommit on (a server whose `init_connect` or
 * global default turns it off would leave every renewal uncommitted, so other sessions would see the
 * lease run out while this one believes it renewed), the server's clock read in UTC (SYSDATE never
 * jumps at a daylight-saving change), and the longest `wait_timeout` MySQL allows (a year), so that the
 * server never closes the main connection, which holds the entries' names however long it is idle. The
 * lease, not the connection, decides how long a dead client holds. A row lock wait bounded by the
 * statement's deadline (`lockWaitSeconds`). And the `sql_mode` baton's
 * statements are written for (`SQL_MODE` below), whatever the server's default.
 */
export function setupStatement(statementMs: number): string {
  return (
    `SET NAMES utf8mb4, sql_mode = '${SQL_MODE}', autocommit = 1, time_zone = '+00:00', wait_timeout = 31536000,` +
    ` innodb_lock_wait_timeout = ${lockWaitSeconds(statementMs)}`
  );
}

/**
 * How long a statement may wait for a row lock: half its deadline, in whole seconds (at least 1, the
 * least MySQL takes), so that the server answers a long wait with a lock wait timeout (sent again on
 * the same connection) before the client's deadline drops the connection, and with it the main
 * connection's wake-up names. The server's default is 50 s.
 */
export function lockWaitSeconds(statementMs: number): number {
  return Math.max(1, Math.floor(statementMs / 2_000));
}

/**
 * The session's `sql_mode`, pinned: mysql2 escapes values with backslashes, which `NO_BACKSLASH_ESCAPES`
 * would read as text (a quote in a value would end its string); `ANSI_QUOTES`, `PIPES_AS_CONCAT`,
 * `IGNORE_SPACE` or MariaDB's `ORACLE` change how statements parse, and a procedure keeps the mode it was
 * created under. Strict, so that a value that does not fit is refused rather than cut. Every mode named
 * here exists on MySQL 8 and MariaDB 10.6+.
 */
const SQL_MODE = 'STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION';

export interface OpenedSession {
  /** The requests' connection, which holds the entries' names. */
  readonly main: Link;
  /** The heartbeat's connection: renewals never wait behind requests. */
  readonly beat: Link;
  readonly session: string;
  /** `performance.now()` just before the statement that opened the session was sent. */
  readonly openedAt: number;
  /** MySQL or MariaDB: how `GET_LOCK` reads its timeout. */
  readonly flavour: ServerFlavour;
}

/**
 * Connects the session's two connections, refuses a server baton must not run on, makes sure baton's
 * tables are there, opens the session's row. Anything made is closed again on failure.
 */
export async function openSession(
  options: MysqlDriverOptions,
  events: { main: LinkEvents; beat: LinkEvents },
): Promise<OpenedSession> {
  const create = await loadMysql2();
  const config = { ...connectionConfig(options.url, options.tls), connectTimeout: options.connectTimeoutMs };
  const setup = setupStatement(attemptMs(options.sessionTimeoutMs));
  const main = new Link(create, config, attemptMs(options.sessionTimeoutMs), setup, events.main);
  const beat = new Link(create, config, attemptMs(options.sessionTimeoutMs), setup, events.beat);
  const opened = await openLeaseSession(mysqlServer(options), {
    main,
    second: beat,
    prepare: async () => {
      const flavour = await checkServer(main, options.url.shown);
      await ensureSchema(main, options.url.database, options.createSchema);
      return flavour;
    },
    openRow: async () => {
      const host = `${hostname()} pid ${process.pid}`.slice(0, 255);
      const rows = await main.call<{ id: string }>('CALL baton_open_session(?, ?)', [options.sessionTimeoutMs, host]);
      return String(rows[0]!.id);
    },
    dropRow: (session) => main.query('DELETE FROM baton_sessions WHERE id = ?', [session]),
  });
  return { main, beat, session: opened.session, openedAt: opened.openedAt, flavour: opened.prepared };
}

/** How a MySQL server's answers read while a session is opened. */
function mysqlServer(options: MysqlDriverOptions): ServerAt {
  return {
    title: 'MySQL',
    shown: options.url.shown,
    connectTimeoutMs: options.connectTimeoutMs,
    signal: options.signal,
    answered: (error) => serverErrno(error) !== undefined,
    mapFailure: (error) => mysqlFailures('(opening)').map(error),
    refusedLogin: (error) =>
      denied(error)
        ? new AccessDeniedError(`MySQL refused the login at ${options.url.shown}: ${(error as Error).message}`, {
            cause: error,
          })
        : undefined,
    // Too many connections, or the server shutting down (a restart).
    asksToRetry: (error) => serverErrno(error) === 1040 || serverErrno(error) === 1053,
  };
}

/** Reads the server's flavour and refuses a server baton must not run on (server-checks.ts says which and why). */
async function checkServer(main: Link, shown: string): Promise<ServerFlavour> {
  const facts = await readServerFacts(main);
  const refusal = serverRefusal(facts);
  if (refusal !== undefined) throw new BackendError(`MySQL at ${shown} ${refusal} (see docs/mysql.md)`);
  return flavourOf(facts);
}

/**
 * Creates baton's tables and procedures when they are missing, under a server-wide `GET_LOCK` so that
 * many processes connecting at once create them once (DDL commits on its own in MySQL: the version row
 * is written last, and a creation cut short is completed by the next one).
 */
export async function ensureSchema(main: Link, database: string, create: boolean): Promise<void> {
  const found = await schemaVersion(main);
  if (found === SCHEMA_VERSION) return;
  if (found !== undefined) throw otherVersion(database, String(found));
  // A creation of an older version cut short before its version row: its tables would be kept as they are.
  if (await olderEntriesTable(main)) throw otherVersion(database, 'older (no version row)');
  if (!create)
    throw new BackendError(
      `baton's tables do not exist in "${database}" and createSchema is false: have them created with \`baton schema <url>\` (or print their SQL with --print)`,
    );
  const lock = lockNameOf(database, 'schema');
  // Another process may hold it for a while (creating every table): the wait gets its own deadline.
  const [row] = await main.rows<{ got: number | null }>('SELECT GET_LOCK(?, 30) AS got', [lock], 35_000);
  if (Number(row?.got) !== 1) throw new BackendError(`could not take the lock that serialises baton's schema creation`);
  try {
    if ((await schemaVersion(main)) === SCHEMA_VERSION) return;
    for (const statement of schemaStatements()) await main.query(statement);
  } finally {
    await main.query('DO RELEASE_LOCK(?)', [lock]).catch(() => undefined);
  }
  const created = await schemaVersion(main);
  if (created !== SCHEMA_VERSION)
    throw new BackendError(`baton's tables were not found after their creation (version ${created ?? 'missing'})`);
}

/** The preview backend migrates no schema: one of another version is refused, never used. */
function otherVersion(database: string, found: string): BackendError {
  return new BackendError(
    `baton's tables in "${database}" have schema version ${found}; this baton needs version ${SCHEMA_VERSION} and migrates none: ` +
      `with no session of the other version connected, drop baton's tables and procedures (docs/mysql.md lists them) or use another database`,
  );
}

/** Whether `baton_entries` exists with version 1's primary key (the token) rather than the entry's key. */
async function olderEntriesTable(main: Link): Promise<boolean> {
  const rows = await main.rows<{ column: string }>(
    "SELECT column_name AS `column` FROM information_schema.statistics WHERE table_schema = DATABASE() AND table_name = 'baton_entries' AND index_name = 'PRIMARY'",
  );
  return rows.length > 0 && rows.some((row) => String(row.column).toLowerCase() !== 'key');
}

async function schemaVersion(main: Link): Promise<number | undefined> {
  const tables = await main.rows(
    "SELECT 1 FROM information_schema.tables WHERE table_schema = DATABASE() AND table_name = 'baton_version'",
  );
  if (tables.length === 0) return undefined;
  const rows = await main.rows<{ version: number }>('SELECT version FROM baton_version');
  return rows[0] === undefined ? undefined : Number(rows[0].version);
}

/** `baton schema <url>`: creates baton's tables (as `connect()` would), for a DBA whose application user may not run DDL. */
export async function applySchema(url: MysqlUrl, connectTimeoutMs: number): Promise<'created' | 'present'> {
  const create = await loadMysql2();
  const link = new Link(create, connectionConfig(url, undefined), connectTimeoutMs, setupStatement(connectTimeoutMs));
  const server = {
    title: 'MySQL',
    shown: url.shown,
    connectTimeoutMs,
    answered: (error: unknown) => serverErrno(error) !== undefined,
    mapFailure: (error: unknown) => mysqlFailures('(schema)').map(error),
  };
  return applySchemaOn(link, server, async () => {
    const before = await schemaVersion(link);
    await ensureSchema(link, url.database, true);
    return before === undefined ? 'created' : 'present';
  });
}

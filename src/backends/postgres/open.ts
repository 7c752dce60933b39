import { hostname } from 'node:os';

import type { ClientConfig } from 'pg';

import { AccessDeniedError, BackendError } from '../../../recipes/errors.js';
import { loadPeer } from '../../metrics/peer.js';
import { applySchemaOn, attemptMs, openLeaseSession, type ServerAt } from '../sql/open.js';
import { postgresFailures, sqlState } from './failures.js';
import { type ClientClass, Link, type LinkEvents } from './link.js';
import { LOCK_CLASS, SCHEMA_VERSION, schemaSql } from './schema.js';
import { ensureAdditions, type SchemaFeatures } from './schema-additions.js';

export interface PostgresDriverOptions {
  /** The URL without baton's parameters (may hold a password: never shown). */
  readonly connectionString: string;
  /** The URL as it may be shown (no password). */
  readonly shown: string;
  readonly namespace: string;
  readonly schema: string;
  readonly sessionTimeoutMs: number;
  readonly connectTimeoutMs: number;
  /** Create baton's schema when it is missing (default); false: refuse to connect instead. */
  readonly createSchema: boolean;
  readonly signal?: AbortSignal | undefined;
}

/** node-postgres, loaded only for postgres URLs (an optional peer dependency). */
export async function loadPg(): Promise<ClientClass> {
  const pg = await loadPeer('pg', 'a postgres:// URL', () => import('pg'));
  return (pg.default ?? pg).Client;
}

/**
 * What baton's connections need whatever the role's, the database's or the URL's settings: READ COMMITTED
 * (the enqueue reads the queue after its lock in a fresh snapshot) and synchronous commits (a grant
 * acknowledged is on disk). Set as startup options, which take precedence over `ALTER ROLE/DATABASE ...
 * SET`; after those of the URL's `options` parameter (or PGOPTIONS), so that ours win.
 */
export const REQUIRED_OPTIONS = '-c default_transaction_isolation=read\\ committed -c synchronous_commit=on';

/** node-postgres's settings for a connection string: its `options` parameter merged with baton's. */
export function connectionConfig(connectionString: string): { connectionString: string; options: string } {
  const url = new URL(connectionString);
  const theirs = url.searchParams.get('options') ?? process.env['PGOPTIONS'] ?? '';
  url.searchParams.delete('options');
  return {
    connectionString: url.toString(),
    options: theirs === '' ? REQUIRED_OPTIONS : `${theirs} ${REQUIRED_OPTIONS}`,
  };
}

export interface OpenedSession {
  readonly main: Link;
  readonly listen: Link;
  /** The session's id (the `sessions` row). */
  readonly session: string;
  /** `performance.now()` just before the statement that opened the session was sent. */
  readonly openedAt: number;
  /** What the schema has beyond its version's tables (a schema made by older code may lack some). */
  readonly features: SchemaFeatures;
}

/**
 * Connects the session's two connections, makes sure baton's schema is there (creating it unless
 * `createSchema` is false), and opens the session's row. Anything made is closed again on failure.
 */
export async function openSession(options: PostgresDriverOptions, listenEvents: LinkEvents): Promise<OpenedSession> {
  const Client = await loadPg();
  const config: ClientConfig = {
    ...connectionConfig(options.connectionString),
    connectionTimeoutMillis: options.connectTimeoutMs,
    application_name: 'baton',
  };
  const main = new Link(Client, config, attemptMs(options.sessionTimeoutMs));
  const listen = new Link(Client, config, attemptMs(options.sessionTimeoutMs), listenEvents);
  const { schema } = options;
  const opened = await openLeaseSession(postgresServer(options), {
    main,
    second: listen,
    prepare: () => ensureSchema(main, schema, options.createSchema),
    openRow: async () => {
      const host = `${hostname()} pid ${process.pid}`;
      const sql = `SELECT ${schema}.open_session($1, $2) AS id`;
      return (await main.query<{ id: string }>(sql, [options.sessionTimeoutMs, host])).rows[0]!.id;
    },
    dropRow: (session) => main.query(`DELETE FROM ${schema}.sessions WHERE id = $1`, [session]),
  });
  return { main, listen, session: opened.session, openedAt: opened.openedAt, features: opened.prepared };
}

/** How a PostgreSQL server's answers read while a session is opened. */
function postgresServer(options: PostgresDriverOptions): ServerAt {
  return {
    title: 'PostgreSQL',
    shown: options.shown,
    connectTimeoutMs: options.connectTimeoutMs,
    signal: options.signal,
    answered: (error) => sqlState(error) !== undefined,
    mapFailure: (error) => postgresFailures('(opening)', options.schema).map(error),
    refusedLogin(error) {
      const state = sqlState(error);
      // Refused credentials (28P01 wrong password, 28000 no such role or not allowed by pg_hba).
      if (state !== '28P01' && state !== '28000') return undefined;
      return new AccessDeniedError(
        `PostgreSQL refused the login at ${options.shown} (${state === '28P01' ? 'wrong password' : 'role not allowed'})`,
        { cause: error },
      );
    },
    // Starting up (57P03), or a connection failure the server reported (class 08).
    asksToRetry: (error) => sqlState(error) === '57P03' || sqlState(error)?.startsWith('08') === true,
  };
}

/** The schema of this version made if missing, and what an older one lacks added (schema-additions.ts). */
export async function ensureSchema(main: Link, schema: string, create: boolean): Promise<SchemaFeatures> {
  await ensureVersion(main, schema, create);
  return ensureAdditions(main, schema, create);
}

/**
 * The schema's version, or undefined when baton's tables are not there. Creation runs in one
 * transaction under an advisory lock, so that many processes connecting at once create it once.
 */
async function ensureVersion(main: Link, schema: string, create: boolean): Promise<void> {
  const found = await schemaVersion(main, schema);
  if (found === SCHEMA_VERSION) return;
  if (found !== undefined)
    throw new BackendError(
      `baton's schema "${schema}" has version ${found}; this baton needs version ${SCHEMA_VERSION} (see docs/postgres.md)`,
    );
  if (!create) {
    throw new BackendError(
      `baton's schema "${schema}" does not exist and createSchema is false: have it created with \`baton schema <url>\` (or print its SQL with --print)`,
    );
  }
  // One multi-statement query, one implicit transaction: the lock, then the DDL. A connection that breaks
  // in the middle fails the query (a BEGIN and a COMMIT sent apart could end on two connections, the
  // COMMIT a no-op on the second while saying it succeeded). Another process that created the schema
  // while this one waited for the lock makes the DDL fail on an existing object: the version is read again.
  try {
    await main.query(
      `SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext('schema:${schema}'));\n${schemaSql(schema)}`,
    );
  } catch (error) {
    if ((await schemaVersion(main, schema).catch(() => undefined)) === SCHEMA_VERSION) return;
    throw error;
  }
  const created = await schemaVersion(main, schema);
  if (created !== SCHEMA_VERSION)
    throw new BackendError(
      `baton's schema "${schema}" was not found after its creation (version ${created ?? 'missing'})`,
    );
}

async function schemaVersion(main: Link, schema: string): Promise<number | undefined> {
  // pg_class read with the statement's snapshot: to_regclass would ask the catalog cache, which may not
  // yet know of a table another session created while this one waited for the advisory lock.
  const exists = await main.query(
    'SELECT 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2',
    [schema, 'version'],
  );
  if (exists.rows.length === 0) return undefined;
  const rows = (await main.query<{ version: number }>(`SELECT version FROM ${schema}.version`)).rows;
  return rows[0]?.version;
}

/**
 * `baton schema <url>`: creates baton's schema (as `connect()` would on its first connect), for a DBA
 * whose application role may not run DDL. Says whether it was there already.
 */
export async function applySchema(
  url: { connectionString: string; shown: string; schema: string },
  connectTimeoutMs: number,
): Promise<'created' | 'present'> {
  const Client = await loadPg();
  const link = new Link(
    Client,
    {
      ...connectionConfig(url.connectionString),
      connectionTimeoutMillis: connectTimeoutMs,
      application_name: 'baton schema',
    },
    connectTimeoutMs,
  );
  const server = {
    title: 'PostgreSQL',
    shown: url.shown,
    connectTimeoutMs,
    answered: (error: unknown) => sqlState(error) !== undefined,
    mapFailure: (error: unknown) => postgresFailures('(schema)', url.schema).map(error),
  };
  return applySchemaOn(link, server, async () => {
    const before = await schemaVersion(link, url.schema);
    await ensureSchema(link, url.schema, true);
    return before === undefined ? 'created' : 'present';
  });
}

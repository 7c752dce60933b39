import { hostname } from 'node:os';

import type { ClientConfig } from 'pg';

import { AccessDeniedError, BackendError, BatonError } from '../../../recipes/errors.js';
import { loadPeer } from '../../metrics/peer.js';
import { describeDialFailure, dialErrorCode } from '../dial.js';
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

/** How long one statement may go unanswered before its connection is dropped and it is sent again. */
export function attemptMs(sessionTimeoutMs: number): number {
  return Math.max(Math.floor(sessionTimeoutMs / 3), 500);
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
  const onAbort = (): void => {
    main.destroy();
    listen.destroy();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  try {
    await connectFirst(main, options);
    const features = await ensureSchema(main, options.schema, options.createSchema);
    const openedAt = performance.now();
    const rows = (
      await main.query<{ id: string }>(`SELECT ${options.schema}.open_session($1, $2) AS id`, [
        options.sessionTimeoutMs,
        `${hostname()} pid ${process.pid}`,
      ])
    ).rows;
    const session = rows[0]!.id;
    try {
      await listen.open();
    } catch (error) {
      await main.query(`DELETE FROM ${options.schema}.sessions WHERE id = $1`, [session]).catch(() => undefined);
      throw error;
    }
    return { main, listen, session, openedAt, features };
  } catch (error) {
    main.destroy();
    listen.destroy();
    options.signal?.throwIfAborted();
    if (error instanceof BatonError) throw error;
    if (sqlState(error) !== undefined) throw postgresFailures('(opening)', options.schema).map(error);
    throw new BackendError(
      `PostgreSQL at ${options.shown} failed while the session was opened: ${dialFailure(error, options.connectTimeoutMs)}`,
      { cause: error },
    );
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * The first connection, tried again (a server restarting, or refusing while it starts up) until the
 * connect timeout; a refused login or another answer of the server's ends it at once.
 */
async function connectFirst(main: Link, options: PostgresDriverOptions): Promise<void> {
  const giveUpAt = performance.now() + options.connectTimeoutMs;
  for (let attempt = 0; ; attempt += 1) {
    try {
      await main.open();
      return;
    } catch (error) {
      const state = sqlState(error);
      // Refused credentials (28P01 wrong password, 28000 no such role or not allowed by pg_hba).
      if (state === '28P01' || state === '28000') {
        throw new AccessDeniedError(
          `PostgreSQL refused the login at ${options.shown} (${state === '28P01' ? 'wrong password' : 'role not allowed'})`,
          { cause: error },
        );
      }
      // A name that does not exist will not come to exist within the timeout: no point in waiting.
      const final = dialErrorCode(error) === 'ENOTFOUND' || dialErrorCode(error) === 'EAI_FAIL';
      const again = !final && (state === undefined || state === '57P03' || state.startsWith('08'));
      if (
        !again ||
        options.signal?.aborted === true ||
        main.closed ||
        performance.now() + backoffMs(attempt) >= giveUpAt
      ) {
        if (state !== undefined && !final && !again) throw error;
        const within = final ? '' : ` within ${options.connectTimeoutMs} ms`;
        throw new BackendError(
          `could not connect to PostgreSQL at ${options.shown}${within}: ${dialFailure(error, options.connectTimeoutMs)}`,
          { cause: error },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, backoffMs(attempt)));
    }
  }
}

function backoffMs(attempt: number): number {
  return Math.min(50 * 2 ** attempt, 1_000);
}

/** A failed dial in words: a socket's error by its code, anything else by its message. */
function dialFailure(error: unknown, waitedMs: number): string {
  if (dialErrorCode(error) !== undefined || !(error instanceof Error)) return describeDialFailure(error, waitedMs);
  return error.message;
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
  try {
    try {
      await link.open();
    } catch (error) {
      throw new BackendError(
        `could not connect to PostgreSQL at ${url.shown}: ${dialFailure(error, connectTimeoutMs)}`,
        { cause: error },
      );
    }
    const before = await schemaVersion(link, url.schema);
    await ensureSchema(link, url.schema, true);
    return before === undefined ? 'created' : 'present';
  } catch (error) {
    if (error instanceof BatonError || sqlState(error) === undefined) throw error;
    throw postgresFailures('(schema)', url.schema).map(error);
  } finally {
    await link.close();
  }
}

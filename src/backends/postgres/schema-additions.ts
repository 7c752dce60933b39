import { enqueueAheadSql, moversIndexSql } from './enqueue-ahead-sql.js';
import { sqlState } from './failures.js';
import type { Link } from './link.js';
import { listBeforeSql } from './list-before-sql.js';
import { LOCK_CLASS, putEntrySql } from './schema.js';

/**
 * What a schema of version 1 made by older code may lack: functions and an index added since, which
 * change no table's rows and which older clients never use, so that the version stays 1 and old and
 * new clients share a database through a rolling deploy.
 */
export interface SchemaFeatures {
  /** Whether `<schema>.list_before` is there; without it a woken waiter lists the whole queue. */
  readonly listBefore: boolean;
  /** Whether `<schema>.enqueue_ahead` is there; without it an enqueue answers with the whole queue. */
  readonly enqueueAhead: boolean;
}

/** How long an addition waits for a lock (the schema's, the table's) before it is left for a later connect. */
const ADDITION_LOCK_TIMEOUT_MS = 2_000;

/** One function added to an older schema (with what goes with it), and its DDL. */
interface Addition {
  readonly function: string;
  readonly sql: (schema: string) => string;
}

/**
 * In the order they are made: `enqueue_ahead` calls `list_before` and `put_entry` (plpgsql resolves
 * the names when it runs, so a missing one would fail the enqueue, not the creation). The indexes go
 * with `enqueue_ahead`, after it in its transaction: a process that lost the race fails on the
 * function before it asks for the table's lock, and a connect where everything is there takes none.
 */
const ADDITIONS: readonly Addition[] = [
  { function: 'list_before', sql: listBeforeSql },
  { function: 'put_entry', sql: putEntrySql },
  { function: 'enqueue_ahead', sql: (schema) => `${enqueueAheadSql(schema)}\n${moversIndexSql(schema)}` },
];

/**
 * Adds what is missing to an existing schema of this version, when `create` allows it: each function
 * (the index with `enqueue_ahead`) in one query of its own (one implicit transaction) under the advisory lock of the schema's creation,
 * never replacing a function already there (CREATE, not CREATE OR REPLACE: another process may have
 * added it while this one waited for the lock; its CREATE then fails and the catalog is read again). A
 * role that may not create functions or indexes in the schema (a DBA made it; `createSchema` left at
 * its default) connects as before, without what it could not add. `enqueue_ahead` counts only with
 * `list_before` beside it (it calls it).
 */
export async function ensureAdditions(main: Link, schema: string, create: boolean): Promise<SchemaFeatures> {
  const present = await functionsIn(main, schema);
  const missing = create ? ADDITIONS.filter((addition) => !present.has(addition.function)) : [];
  for (const addition of missing) {
    try {
      // The index build waits for the writes in flight on `entries` and blocks new ones: a busy table
      // is left for a later connect (55P03) rather than stalled or waited for past the connect's deadline.
      await main.query(
        `SET lock_timeout = ${ADDITION_LOCK_TIMEOUT_MS};\n` +
          `SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext('schema:${schema}'));\n${addition.sql(schema)}`,
      );
    } catch (error) {
      // 42723: added by another process meanwhile; 42501: no CREATE privilege on the schema (or not
      // the table's owner, for the index); 55P03: the table's lock not had in time.
      const state = sqlState(error);
      if (state !== '42723' && state !== '42501' && state !== '55P03') throw error;
    } finally {
      await main.query('RESET lock_timeout').catch(() => undefined);
    }
  }
  const found = missing.length > 0 ? await functionsIn(main, schema) : present;
  const listBefore = found.has('list_before');
  return { listBefore, enqueueAhead: listBefore && found.has('put_entry') && found.has('enqueue_ahead') };
}

/** The names of the schema's functions that the additions look for. */
async function functionsIn(main: Link, schema: string): Promise<Set<string>> {
  // pg_proc read with the statement's snapshot (not the catalog cache), as the schema's version is.
  const names = ADDITIONS.map((addition) => addition.function);
  const rows = await main.query<{ proname: string }>(
    'SELECT p.proname FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = ANY($2::text[])',
    [schema, names],
  );
  return new Set(rows.rows.map((row) => row.proname));
}

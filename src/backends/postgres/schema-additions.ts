import { sqlState } from './failures.js';
import type { Link } from './link.js';
import { listBeforeSql } from './list-before-sql.js';
import { LOCK_CLASS } from './schema.js';

/**
 * What a schema of version 1 made by older code may lack: functions added since, which change no table
 * and which older clients never call, so that the version stays 1 and old and new clients share a
 * database through a rolling deploy. Today one: `list_before`, the short read at a wake.
 */
export interface SchemaFeatures {
  /** Whether `<schema>.list_before` is there; without it a woken waiter lists the whole queue. */
  readonly listBefore: boolean;
}

/**
 * Adds what is missing to an existing schema of this version, when `create` allows it: under the
 * advisory lock of the schema's creation, in one query (one implicit transaction), never replacing a
 * function already there (CREATE, not CREATE OR REPLACE: another process may have added it while this
 * one waited for the lock; its CREATE then fails and the catalog is read again). A role that may not
 * create functions in the schema (a DBA made it; `createSchema` left at its default) connects as before,
 * without the feature.
 */
export async function ensureAdditions(main: Link, schema: string, create: boolean): Promise<SchemaFeatures> {
  if (await hasFunction(main, schema, 'list_before')) return { listBefore: true };
  if (!create) return { listBefore: false };
  try {
    await main.query(
      `SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext('schema:${schema}'));\n${listBeforeSql(schema)}`,
    );
  } catch (error) {
    // 42723: added by another process meanwhile; 42501: no CREATE privilege on the schema.
    const state = sqlState(error);
    if (state !== '42723' && state !== '42501') throw error;
  }
  return { listBefore: await hasFunction(main, schema, 'list_before') };
}

async function hasFunction(main: Link, schema: string, name: string): Promise<boolean> {
  // pg_proc read with the statement's snapshot (not the catalog cache), as the schema's version is.
  const rows = await main.query(
    'SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = $1 AND p.proname = $2',
    [schema, name],
  );
  return rows.rows.length > 0;
}

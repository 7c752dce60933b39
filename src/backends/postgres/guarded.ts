import type { Abortable, Entry, GuardedClient, GuardedOp } from '../../../recipes/contract.js';
import { InvalidArgumentError, LockLostError } from '../../../recipes/errors.js';
import { sqlState } from './failures.js';

/**
 * Guarded writes on PostgreSQL. A lock's values are rows of `<schema>.guarded_values` (namespace,
 * queue, name), a table of their own that no listing of a queue reads; they outlive the holder and go
 * only when deleted. Every guarded statement reaches the writer's entry row and its session's row
 * with row locks (`FOR SHARE` on the entry, `FOR KEY SHARE` on the session) and the lease checked by
 * the server's clock: an entry row being deleted (its session swept, an admin's delete) makes the
 * statement wait and then find no row, and while the locks are held the sweep that would remove the
 * entry, and so any grant past it (`list` in schema.ts, `list_before` in list-before-sql.ts), waits for them.
 */
export class GuardedStatements {
  readonly put: string;
  readonly delete: string;
  readonly read: string;
  readonly lock: string;
  readonly check: string;

  constructor(s: string) {
    const held =
      `SELECT e.namespace, e.queue FROM ${s}.entries e` +
      ` JOIN ${s}.sessions o ON o.id = e.session AND o.expires_at > clock_timestamp()` +
      ` WHERE e.key = $1 AND e.session = $2`;
    const locked = `${held} FOR SHARE OF e FOR KEY SHARE OF o`;
    this.put =
      `INSERT INTO ${s}.guarded_values AS v (namespace, queue, name, value)` +
      ` SELECT h.namespace, h.queue, $3, $4 FROM (${locked}) h` +
      ` ON CONFLICT (namespace, queue, name) DO UPDATE SET value = EXCLUDED.value, updated_at = clock_timestamp()`;
    this.delete =
      `WITH h AS (${locked}), gone AS (DELETE FROM ${s}.guarded_values v USING h` +
      ` WHERE v.namespace = h.namespace AND v.queue = h.queue AND v.name = $3)` +
      ` SELECT count(*)::int AS held FROM h`;
    this.read = `SELECT value FROM ${s}.guarded_values WHERE namespace = $1 AND queue = $2 AND name = $3`;
    // The transaction's first statement and its last check before COMMIT.
    this.lock = `SELECT count(*)::int AS held FROM (${locked}) h`;
    this.check = `SELECT count(*)::int AS held FROM (${held}) h`;
  }
}

/** What a guarded write needs of the driver: its statements, its session row, one retried request. */
export interface GuardedHost {
  readonly sql: GuardedStatements;
  readonly session: string;
  request<R extends Record<string, unknown>>(text: string, values: readonly unknown[]): Promise<R[]>;
}

/** One statement: the write applies only if the entry row and its session's lease are there. */
export async function postgresGuardedWrite(host: GuardedHost, entry: Entry, op: GuardedOp): Promise<boolean> {
  if (op.type === 'put') {
    const rows = await host.request<{ namespace: string }>(`${host.sql.put} RETURNING v.namespace`, [
      entry.key,
      host.session,
      op.name,
      op.value,
    ]);
    return rows.length === 1;
  }
  const rows = await host.request<{ held: number }>(host.sql.delete, [entry.key, host.session, op.name]);
  return rows[0]?.held === 1;
}

/** How the guarded transaction is bounded on the server: every statement, and every pause between them. */
export interface TransactionBounds {
  /** statement_timeout and idle_in_transaction_session_timeout (and transaction_timeout on PostgreSQL 17+). */
  readonly limitMs: number;
  /** Checked before BEGIN and before COMMIT: aborted, the transaction is rolled back. */
  readonly signal: Abortable;
}

/**
 * Runs `work` on the user's own client (a `pg.Client` or a pool's client, on baton's database) in a
 * transaction that first locks the holder's entry and session rows and, just before COMMIT, checks
 * the lease again: the commit happens only if the lease was alive then, and no other holder can be
 * granted while the transaction is open (the sweep of the entry waits for its locks).
 */
export async function postgresGuardedTransaction<T>(
  sql: GuardedStatements,
  session: string,
  entry: Entry,
  client: GuardedClient,
  work: (client: GuardedClient) => Promise<T>,
  bounds: TransactionBounds,
  what: string,
): Promise<T> {
  bounds.signal.throwIfAborted();
  await begin(client, bounds.limitMs);
  let value: T;
  try {
    if ((await heldRows(client, sql.lock, entry, session)) !== 1) throw lost(what, 'the entry was gone at the start');
    value = await work(client);
    bounds.signal.throwIfAborted();
    if ((await heldRows(client, sql.check, entry, session)) !== 1) throw lost(what, 'the lease ran out before COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw wrongDatabase(error) ?? error;
  }
  await client.query('COMMIT');
  return value;
}

async function begin(client: GuardedClient, limitMs: number): Promise<void> {
  const ms = Math.max(1, Math.floor(limitMs));
  // Integers only in this text: no parameter can be given to a multi-statement query.
  await client.query(
    `BEGIN ISOLATION LEVEL READ COMMITTED; SET LOCAL statement_timeout = ${ms};` +
      ` SET LOCAL idle_in_transaction_session_timeout = ${ms};` +
      ` SELECT set_config('transaction_timeout', '${ms}', true) WHERE current_setting('server_version_num')::int >= 170000`,
  );
}

async function heldRows(client: GuardedClient, text: string, entry: Entry, session: string): Promise<number> {
  const result = await client.query(text, [entry.key, session]);
  const row = (result.rows as { held?: unknown }[])[0];
  return Number(row?.held ?? 0);
}

function lost(what: string, why: string): LockLostError {
  return new LockLostError(what, { cause: new Error(`guarded transaction rolled back: ${why}`) });
}

/** baton's tables missing on the client's database: it is not baton's. */
function wrongDatabase(error: unknown): Error | undefined {
  const state = sqlState(error);
  if (state !== '42P01' && state !== '3F000') return undefined;
  return new InvalidArgumentError(
    'client',
    'a client whose database has no baton schema',
    "a pg client connected to the database of the lock's session",
  );
}

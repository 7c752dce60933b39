/**
 * The fence on PostgreSQL: `<schema>.advance(resource, token)` called in the user's own transaction
 * on any database it writes to (see postgres-schema.ts), through the user's own `pg` client. This file
 * never loads `pg`: it only calls `query` on what it is given.
 */
import { InvalidArgumentError, StaleTokenError } from '../../recipes/errors.js';
import { checkOptionKeys } from '../../recipes/validate.js';
import { checkResource, checkToken, tokenFromStore } from './arguments.js';
import { FENCE_SCHEMA, FENCE_SCHEMA_NAME, fenceSchemaSql, STALE_TOKEN_SQLSTATE } from './postgres-schema.js';
import { commitAfter, onCheckedOut } from './transaction.js';

/** What the fence needs of a `pg` `Client` or a client checked out of a `Pool`: its `query`. */
export interface PgQueryable {
  /** Runs one statement with `$1`-style parameters (pg's `client.query(text, values)`). */
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** What `PostgresFence.poolTransaction` needs of a `pg` `Pool` whose clients are `C`. */
export interface PgPoolLike<C extends PgQueryable = PgQueryable> {
  /** Checks a client out (pg's `pool.connect()`); `release` returns it. */
  connect(): Promise<C & { release(error?: Error | boolean): void }>;
}

/** Options of `new PostgresFence()`. */
export interface PostgresFenceOptions {
  /** The schema of the marks table and the `advance` function (an unquoted identifier). Default `baton_fence`. */
  readonly schema?: string;
}

/** Options of `PostgresFence.transaction` and `poolTransaction`. */
export interface FencedTransactionOptions {
  /**
   * `SET LOCAL lock_timeout` for the transaction, in milliseconds: how long the fence (and the body's
   * statements) may wait for a row lock, e.g. the mark's while an older holder's transaction is open.
   * Default: the server's setting.
   */
  readonly lockTimeoutMs?: number;
}

/**
 * The resource-side fence on PostgreSQL. `advance` inside your transaction refuses a stale token
 * with `StaleTokenError` (the transaction is then aborted: roll it back); `transaction` runs BEGIN,
 * the fence, your statements and COMMIT, and rolls back on any error.
 *
 *   const fence = new PostgresFence();
 *   await fence.transaction(client, 'ledger/2026-12', lock.fencingToken, (c) => c.query('UPDATE ...'));
 */
export class PostgresFence {
  /** The schema the fence's table and function live in. */
  readonly schema: string;

  /** Throws `InvalidArgumentError` for an unknown option key or a schema name that is not a plain identifier. */
  constructor(options: PostgresFenceOptions = {}) {
    checkOptionKeys(options, ['schema']);
    const schema = options.schema ?? FENCE_SCHEMA;
    if (typeof schema !== 'string' || !FENCE_SCHEMA_NAME.test(schema))
      throw new InvalidArgumentError('schema', schema, 'an unquoted identifier such as baton_fence');
    this.schema = schema;
  }

  /** The DDL a DBA applies once per database (idempotent): what `baton fence-schema --print` prints. */
  schemaSql(): string {
    return fenceSchemaSql(this.schema);
  }

  /** Creates the schema, table and function if they are missing, in one transaction on `client`. */
  async createSchema(client: PgQueryable): Promise<void> {
    await client.query(`BEGIN;\n${this.schemaSql()}COMMIT;`);
  }

  /**
   * The fence, in the caller's open transaction on `client`: resolves when `token` is at least the
   * resource's mark (which now is `token`); rejects with `StaleTokenError` when it is below.
   */
  async advance(client: PgQueryable, resource: string, token: bigint): Promise<void> {
    checkResource(resource);
    checkToken(token);
    try {
      await client.query(`SELECT ${this.schema}.advance($1, $2::bigint)`, [resource, token.toString()]);
    } catch (error) {
      throw staleTokenOf(error) ?? error;
    }
  }

  /**
   * BEGIN on `client` with the fence (one round trip), `body(client)`, COMMIT: the write and the mark
   * commit together, or nothing does (ROLLBACK on any error, which is rethrown). Resolves to what `body`
   * returned. Throws `InvalidArgumentError` (nothing sent) for a bad resource, token or option.
   */
  async transaction<C extends PgQueryable, T>(
    client: C,
    resource: string,
    token: bigint,
    body: (client: C) => Promise<T>,
    options: FencedTransactionOptions = {},
  ): Promise<T> {
    const lockTimeout = checkTransactionOptions(options);
    const begin = this.#beginFenced(resource, token, lockTimeout);
    // A failed BEGIN leaves an aborted transaction block (or none): ROLLBACK either way.
    await client.query(begin).catch(async (error: unknown) => {
      await client.query('ROLLBACK').catch(() => undefined);
      throw staleTokenOf(error) ?? error;
    });
    return commitAfter(client, body);
  }

  /**
   * BEGIN, the lock timeout and the fence as one multi-statement query (one round trip, as the body's
   * first statement would be): the values are literals, since such a query cannot take parameters.
   */
  #beginFenced(resource: string, token: bigint, lockTimeout: number | undefined): string {
    checkResource(resource);
    checkToken(token);
    if (resource.includes('\0'))
      throw new InvalidArgumentError(
        'resource',
        resource,
        'a string without NUL characters (PostgreSQL text has none)',
      );
    const timeout = lockTimeout === undefined ? '' : ` SET LOCAL lock_timeout = ${lockTimeout};`;
    return `BEGIN;${timeout} SELECT ${this.schema}.advance(${textLiteral(resource)}, ${token.toString()}::bigint)`;
  }

  /**
   * `transaction` on a client checked out of `pool` and returned afterwards. After any error but a
   * stale token the client is discarded (`release(error)`): its state after a failed ROLLBACK is unknown.
   */
  async poolTransaction<C extends PgQueryable, T>(
    pool: PgPoolLike<C>,
    resource: string,
    token: bigint,
    body: (client: C) => Promise<T>,
    options: FencedTransactionOptions = {},
  ): Promise<T> {
    checkTransactionOptions(options);
    return onCheckedOut(
      () => pool.connect(),
      (client) => this.transaction(client, resource, token, body, options),
      (client, failure) => client.release(failure),
    );
  }
}

/**
 * A text literal of any setting of `standard_conforming_strings`: an escape string (`E'...'`) in which
 * backslashes and quotes are doubled, so that nothing in `text` can end the literal.
 */
function textLiteral(text: string): string {
  return `E'${text.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}

/** `StaleTokenError` for the fence's SQLSTATE (its DETAIL carries the fields), else undefined. */
export function staleTokenOf(error: unknown): StaleTokenError | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { code, detail } = error as { code?: unknown; detail?: unknown };
  if (code !== STALE_TOKEN_SQLSTATE || typeof detail !== 'string') return undefined;
  const fields = JSON.parse(detail) as { resource?: unknown; token?: unknown; mark?: unknown };
  return new StaleTokenError(
    checkResource(fields.resource),
    tokenFromStore(fields.token, 'token'),
    tokenFromStore(fields.mark, 'mark'),
    { cause: error },
  );
}

function checkTransactionOptions(options: FencedTransactionOptions): number | undefined {
  checkOptionKeys(options, ['lockTimeoutMs']);
  const { lockTimeoutMs } = options;
  if (lockTimeoutMs === undefined) return undefined;
  if (!Number.isInteger(lockTimeoutMs) || lockTimeoutMs < 1 || lockTimeoutMs > 2_147_483_647)
    throw new InvalidArgumentError('lockTimeoutMs', lockTimeoutMs, 'a whole number of milliseconds from 1');
  return lockTimeoutMs;
}

/**
 * The fence on MySQL and MariaDB: `baton_fence_advance(resource, token, wait_s)` called in the user's
 * own transaction on any database it writes to (see mysql-schema.ts), through the user's own mysql2
 * connection or pool (`mysql2/promise`). This file never loads mysql2: it only calls `query` on what it
 * is given, one statement per call.
 */
import { InvalidArgumentError, StaleTokenError } from '../../recipes/errors.js';
import { checkOptionKeys, validateSignal } from '../../recipes/validate.js';
import { checkResource, checkToken, tokenFromStore } from './arguments.js';
import {
  FENCE_DATABASE_NAME,
  FENCE_SQL_MODE,
  fenceRoutines,
  fenceTableSql,
  MYSQL_STALE_TOKEN_SQLSTATE,
  mysqlFenceSchemaScript,
  qualified,
} from './mysql-schema.js';
import { commitAfter, onCheckedOut } from './transaction.js';

/** What the fence needs of a `mysql2/promise` Connection, Pool or PoolConnection: its `query`. */
export interface MysqlQueryable {
  /** Runs one statement with `?` placeholders (mysql2's `connection.query(sql, values)`). */
  query(sql: string, values?: unknown[]): Promise<unknown>;
}

/** What `MysqlFence.poolTransaction` needs of a `mysql2/promise` Pool whose connections are `C`. */
export interface MysqlPoolLike<C extends MysqlQueryable = MysqlQueryable> {
  /** Checks a connection out (mysql2's `pool.getConnection()`); `release` returns it, `destroy` drops it. */
  getConnection(): Promise<C & { release(): void; destroy(): void }>;
}

/** Options of `new MysqlFence()`. */
export interface MysqlFenceOptions {
  /** The database of the marks table and the procedures. Default: the connection's current database. */
  readonly database?: string;
  /**
   * Create the table and procedures when `transaction` finds them missing (DDL: it commits on its own,
   * so only where no transaction is open). Default true; false for a user that may not run DDL.
   */
  readonly createSchema?: boolean;
}

/** Options of `MysqlFence.transaction`, `poolTransaction` and `advance`. */
export interface MysqlFencedTransactionOptions {
  /**
   * How long the fence may wait for the mark's row lock (held by an older holder's open transaction),
   * in milliseconds, rounded up to whole seconds (`innodb_lock_wait_timeout`'s unit) for the fence's
   * statement only. Default: the session's `innodb_lock_wait_timeout`.
   */
  readonly lockTimeoutMs?: number;
  /** Checked before each statement the helper sends: an aborted signal rolls back and rejects with its reason. */
  readonly signal?: AbortSignal;
}

/** mysql2's error for a procedure that does not exist. */
const ER_SP_DOES_NOT_EXIST = 1305;
/** mysql2's error for a procedure created meanwhile by another caller. */
const ER_SP_ALREADY_EXISTS = 1304;

/**
 * The resource-side fence on MySQL/MariaDB. `advance` inside your transaction refuses a stale token
 * with `StaleTokenError` (the procedure has then rolled your transaction back); `transaction` sends
 * START TRANSACTION with the fence (one round trip), your statements, COMMIT, and rolls back on error.
 *
 *   const fence = new MysqlFence();
 *   await fence.transaction(connection, 'ledger/2026-12', lock.fencingToken, (c) => c.query('UPDATE ...'));
 */
export class MysqlFence {
  /** The database of the fence's table and procedures, or undefined: the connection's current one. */
  readonly database: string | undefined;
  readonly #createSchema: boolean;

  /** Throws `InvalidArgumentError` for an unknown option key or a database name that is not a plain identifier. */
  constructor(options: MysqlFenceOptions = {}) {
    checkOptionKeys(options, ['database', 'createSchema']);
    const { database, createSchema = true } = options;
    if (database !== undefined && (typeof database !== 'string' || !FENCE_DATABASE_NAME.test(database)))
      throw new InvalidArgumentError('database', database, 'a plain identifier such as app (letters, digits, _)');
    if (typeof createSchema !== 'boolean') throw new InvalidArgumentError('createSchema', createSchema, 'a boolean');
    this.database = database;
    this.#createSchema = createSchema;
  }

  /** The script a DBA applies once per database with the mysql client: what `baton fence-schema` prints. */
  schemaSql(): string {
    return mysqlFenceSchemaScript(this.database);
  }

  /**
   * Creates the table and procedures if they are missing, one statement at a time on `connection`, under
   * the fence's pinned sql_mode (the session's own is given back). DDL commits any open transaction.
   */
  async createSchema(connection: MysqlQueryable): Promise<void> {
    await connection.query('SET @baton_fence_saved_mode = @@SESSION.sql_mode');
    try {
      await connection.query(`SET SESSION sql_mode = '${FENCE_SQL_MODE}'`);
      await connection.query(fenceTableSql(this.database));
      for (const { create } of fenceRoutines(this.database))
        await connection.query(create).catch((error: unknown) => {
          if (errnoOf(error) !== ER_SP_ALREADY_EXISTS) throw error;
        });
    } finally {
      await connection.query('SET SESSION sql_mode = @baton_fence_saved_mode');
    }
  }

  /**
   * The fence, in the caller's open transaction on `connection`: resolves when `token` is at least the
   * resource's mark (which now is `token`, locked until the transaction ends); rejects with
   * `StaleTokenError` when it is below, after the procedure rolled the transaction back.
   */
  async advance(
    connection: MysqlQueryable,
    resource: string,
    token: bigint,
    options: MysqlFencedTransactionOptions = {},
  ): Promise<void> {
    const { signal, waitSeconds } = checkFenceOptions(options);
    const values = fenceValues(resource, token, waitSeconds);
    signal?.throwIfAborted();
    await connection
      .query(`CALL ${qualified(this.database, 'baton_fence_advance')}(?, ?, ?)`, values)
      .catch((error: unknown) => {
        throw staleTokenOfMysql(error, resource, token) ?? error;
      });
  }

  /**
   * START TRANSACTION with the fence (one round trip), `body(connection)`, COMMIT: the write and the
   * mark commit together, or nothing does (ROLLBACK on any error, which is rethrown). Resolves to what
   * `body` returned. Call it with no transaction open on `connection` (START TRANSACTION would commit
   * it). Throws `InvalidArgumentError` (nothing sent) for a bad resource, token or option.
   */
  async transaction<C extends MysqlQueryable, T>(
    connection: C,
    resource: string,
    token: bigint,
    body: (connection: C) => Promise<T>,
    options: MysqlFencedTransactionOptions = {},
  ): Promise<T> {
    const { signal, waitSeconds } = checkFenceOptions(options);
    const values = fenceValues(resource, token, waitSeconds);
    signal?.throwIfAborted();
    await this.#begin(connection, values).catch(async (error: unknown) => {
      const stale = staleTokenOfMysql(error, resource, token);
      // The procedure rolled back whatever it raised; a CALL cut short (a KILL QUERY) may not have.
      if (stale === undefined) await connection.query('ROLLBACK').catch(() => undefined);
      throw stale ?? error;
    });
    return commitAfter(connection, body, () => signal?.throwIfAborted());
  }

  /** `CALL baton_fence_begin`; the first time it is missing, the schema is made (if allowed) and it is called again. */
  async #begin(connection: MysqlQueryable, values: unknown[]): Promise<void> {
    const call = `CALL ${qualified(this.database, 'baton_fence_begin')}(?, ?, ?)`;
    try {
      await connection.query(call, values);
    } catch (error) {
      if (errnoOf(error) !== ER_SP_DOES_NOT_EXIST || !this.#createSchema) throw error;
      await this.createSchema(connection);
      await connection.query(call, values);
    }
  }

  /**
   * `transaction` on a connection checked out of `pool` and returned afterwards. After any error but a
   * stale token the connection is dropped (`destroy()`): its state after a failed ROLLBACK is unknown.
   */
  async poolTransaction<C extends MysqlQueryable, T>(
    pool: MysqlPoolLike<C>,
    resource: string,
    token: bigint,
    body: (connection: C) => Promise<T>,
    options: MysqlFencedTransactionOptions = {},
  ): Promise<T> {
    checkFenceOptions(options);
    fenceValues(resource, token, undefined);
    return onCheckedOut(
      () => pool.getConnection(),
      (connection) => this.transaction(connection, resource, token, body, options),
      (connection, failure) => (failure === undefined ? connection.release() : connection.destroy()),
    );
  }
}

/**
 * The CALL's parameters: the resource as its UTF-8 bytes (mysql2 sends a Buffer as a hex literal, so no
 * character set, collation or `NO_BACKSLASH_ESCAPES` can change it), the token in decimal, the wait.
 */
function fenceValues(resource: string, token: bigint, waitSeconds: number | undefined): unknown[] {
  checkResource(resource);
  checkToken(token);
  if (/\p{Cs}/u.test(resource))
    throw new InvalidArgumentError(
      'resource',
      resource,
      'well-formed UTF-16 (no lone surrogate): it is stored as UTF-8',
    );
  // 512 UTF-16 code units are at most 1,536 UTF-8 bytes: the column's 2,048 always hold them.
  return [Buffer.from(resource, 'utf8'), token.toString(), waitSeconds ?? null];
}

function checkFenceOptions(options: MysqlFencedTransactionOptions): {
  signal: AbortSignal | undefined;
  waitSeconds: number | undefined;
} {
  checkOptionKeys(options, ['lockTimeoutMs', 'signal']);
  const { lockTimeoutMs } = options;
  const signal = validateSignal(options.signal);
  if (lockTimeoutMs === undefined) return { signal, waitSeconds: undefined };
  if (!Number.isInteger(lockTimeoutMs) || lockTimeoutMs < 1 || lockTimeoutMs > 1_073_741_824_000)
    throw new InvalidArgumentError('lockTimeoutMs', lockTimeoutMs, 'a whole number of milliseconds from 1');
  return { signal, waitSeconds: Math.ceil(lockTimeoutMs / 1000) };
}

function errnoOf(error: unknown): unknown {
  return typeof error === 'object' && error !== null ? (error as { errno?: unknown }).errno : undefined;
}

/**
 * `StaleTokenError` for the fence's SQLSTATE (its message carries the mark: MySQL's MESSAGE_TEXT is
 * at most 128 characters, too short for a resource name, which the caller knows), else undefined.
 */
export function staleTokenOfMysql(error: unknown, resource: string, token: bigint): StaleTokenError | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const { sqlState, sqlMessage } = error as { sqlState?: unknown; sqlMessage?: unknown };
  if (sqlState !== MYSQL_STALE_TOKEN_SQLSTATE || typeof sqlMessage !== 'string') return undefined;
  const mark = /the mark is (\d+)$/.exec(sqlMessage)?.[1];
  return new StaleTokenError(resource, token, tokenFromStore(mark, 'mark'), { cause: error });
}

/**
 * What the two SQL fences (PostgreSQL, MySQL) do alike once the fence has begun a transaction: the
 * body and COMMIT, or ROLLBACK; and a pool's connection checked out for one fenced transaction.
 * How the transaction begins with the fence, and how a stale token reads, is each fence's own.
 */
import { StaleTokenError } from '../../recipes/errors.js';

/** A connection both fences end a transaction on: pg's client and mysql2's connection take this call. */
interface Ends {
  query(text: string): Promise<unknown>;
}

/**
 * `body(connection)` then COMMIT, in the transaction the fence began: the write and the mark commit
 * together, or nothing does (ROLLBACK on any error, which is rethrown). `beforeCommit` may throw to
 * keep the body's work from committing (MySQL's signal aborted meanwhile).
 */
export async function commitAfter<C extends Ends, T>(
  connection: C,
  body: (connection: C) => Promise<T>,
  beforeCommit?: () => void,
): Promise<T> {
  try {
    const result = await body(connection);
    beforeCommit?.();
    await connection.query('COMMIT');
    return result;
  } catch (error) {
    // The first error is the one to report; a ROLLBACK that fails too means the connection is gone.
    await connection.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/**
 * `work` on a connection checked out of a pool, handed back afterwards with the error that ended it:
 * any error but a stale token, after which the connection's state (a failed ROLLBACK) is unknown and
 * the pool is to drop it. A stale token was refused inside a transaction rolled back as it should be.
 */
export async function onCheckedOut<C, T>(
  checkout: () => Promise<C>,
  work: (connection: C) => Promise<T>,
  handBack: (connection: C, failure: Error | undefined) => void,
): Promise<T> {
  const connection = await checkout();
  let failure: Error | undefined;
  try {
    return await work(connection);
  } catch (error) {
    if (!(error instanceof StaleTokenError)) failure = error instanceof Error ? error : new Error(String(error));
    throw error;
  } finally {
    handBack(connection, failure);
  }
}

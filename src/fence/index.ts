/**
 * `baton-locks/fence`: the resource-side check of fencing tokens, used inside the user's own write.
 * A write whose token is below the highest the resource has accepted is refused with
 * `StaleTokenError`; an equal token passes (the same holder writing again). See docs/fencing.md.
 *
 * - PostgreSQL (any database): `PostgresFence`, over the user's `pg` client or pool.
 * - MySQL/MariaDB (any database): `MysqlFence`, over the user's `mysql2/promise` connection or pool.
 * - Redis: `RedisFence`, one script that checks, writes and moves the mark.
 * - Any store with compare-and-set: `fencedWrite` over a `CompareAndSetStore`; `MemoryCasStore` for tests.
 */
export { StaleTokenError } from '../../recipes/errors.js';
export { type CompareAndSetStore, type FencedRecord, fencedWrite, type FencedWriteOptions } from './cas.js';
export { MemoryCasStore } from './memory.js';
export {
  MysqlFence,
  type MysqlFencedTransactionOptions,
  type MysqlFenceOptions,
  type MysqlPoolLike,
  type MysqlQueryable,
} from './mysql.js';
export { MYSQL_STALE_TOKEN_SQLSTATE } from './mysql-schema.js';
export {
  type FencedTransactionOptions,
  type PgPoolLike,
  type PgQueryable,
  PostgresFence,
  type PostgresFenceOptions,
} from './postgres.js';
export { FENCE_SCHEMA, fenceSchemaSql, STALE_TOKEN_SQLSTATE } from './postgres-schema.js';
export { type FencedSetOptions, type RedisEvalClient, RedisFence } from './redis.js';

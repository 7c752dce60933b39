/**
 * What users see of the backends, two lines each: the `connect()` option keys each backend owns
 * (documented in its folder's `public.ts`, and joined into `ConnectOptions` here), and the types a
 * user names. Type-only, so that a user's project needs no client's declarations; the package's index
 * re-exports all of it.
 */
import type { EtcdConnectOptions } from './etcd/public.js';
import type { MysqlConnectOptions } from './mysql/public.js';
import type { PostgresConnectOptions } from './postgres/public.js';
import type { RedisConnectOptions } from './redis/public.js';
import type { ZookeeperConnectOptions } from './zookeeper/public.js';

export type { EtcdClientOptions, EtcdConnectOptions } from './etcd/public.js';
export type { MysqlClientOptions, MysqlConnectOptions } from './mysql/public.js';
export type { PostgresConnectOptions } from './postgres/public.js';
export type { RedisClientOptions, RedisConnectOptions } from './redis/public.js';
export type { AclPolicy, ZkAuth, ZookeeperConnectOptions } from './zookeeper/public.js';

/** The `connect()` options that only one backend reads: every backend's keys (part of `ConnectOptions`). */
export type BackendConnectOptions = ZookeeperConnectOptions &
  EtcdConnectOptions &
  PostgresConnectOptions &
  MysqlConnectOptions &
  RedisConnectOptions;

/**
 * The options of `connect()` as users see them: one type, documented key by key. Which backend owns
 * which key, and how each is checked, is in the backends' descriptors (`src/backends/<name>/index.ts`).
 */
import type { ConnectionOptions } from 'node:tls';

import type { IOptions } from 'etcd3';

import type { AclPolicy } from './backends/zookeeper/acl.js';

/** etcd client settings passed through to etcd3 (the `etcd` option of `connect`). */
export type EtcdClientOptions = Pick<IOptions, 'auth' | 'credentials' | 'grpcOptions'>;

/**
 * Options of `connect()`. Every key is optional; an unknown key is refused with `InvalidArgumentError`
 * naming the nearest valid one.
 */
export interface ConnectOptions {
  /**
   * How long the server keeps the session after it last heard from the client, in ms: ZooKeeper's
   * session timeout (the server clamps it to 2-20 x tickTime), etcd's lease TTL rounded up to whole
   * seconds (unless `ttlSeconds` is given). `session.timeoutMs` is what the server granted. Default 10 000.
   */
  readonly sessionTimeoutMs?: number;
  /**
   * How long to wait for the first connection before `connect()` rejects with `BackendError`, in ms.
   * Default 15 000.
   */
  readonly connectTimeoutMs?: number;
  /**
   * Gives up connecting when it aborts: `connect()` rejects with its reason, and the client opened for
   * it is closed. Only the connect: the session, once open, does not listen to it.
   */
  readonly signal?: AbortSignal;
  /**
   * How long before the server could expire the session the client declares it lost on its own when
   * the server stops answering. Default: an eighth of the negotiated session timeout.
   */
  readonly deadlineMarginMs?: number;
  /**
   * While the connection is down but the session may still live: 'wait' (default) lets holders keep
   * their locks until the deadline; 'abort' aborts their signals at once (the strictest choice) and
   * gives their entries back as soon as the server is reachable again.
   */
  readonly onSuspend?: 'wait' | 'abort';
  /**
   * A waiter whose queue entry vanished while its session lives (deleted by another client or an
   * operator): 'requeue' (default) queues it again at the tail, within the same deadline; 'fail'
   * rejects its acquire with LockLostError.
   */
  readonly onWaiterLost?: 'requeue' | 'fail';
  /**
   * After the session is lost, open a new one (retrying until it succeeds or the old one is closed) and
   * announce it with `session.on('replaced', next => ...)`. Holds never move: take locks again on `next`.
   */
  readonly reconnectAfterLoss?: boolean;
  /** ZooKeeper: credentials sent before any request, e.g. `{ scheme: 'digest', credentials: 'user:password' }`. */
  readonly auth?: ZkAuth | readonly ZkAuth[];
  /**
   * ZooKeeper: the ACL of every znode baton creates (entries and their parent directories). With
   * `auth`, default `'creator-all-world-read'` (the creator may do everything, everyone may read, so
   * that `baton inspect` works); `'creator-only'` hides the queues too. Without `auth` only `'open'`
   * is possible (ZooKeeper knows a creator only by its credentials), and is the default.
   */
  readonly acl?: AclPolicy;
  /**
   * etcd: the lease TTL asked of the server, in whole seconds (etcd grants at least its minimum, about
   * 1.5 election timeouts: 2 s with etcd's defaults). Default: `sessionTimeoutMs` rounded up to whole
   * seconds when that is given, else 10.
   */
  readonly ttlSeconds?: number;
  /**
   * etcd: passed through to etcd3 (`auth: { username, password }`, `credentials` for TLS,
   * `grpcOptions`). Default: none (plain text, no auth).
   */
  readonly etcd?: EtcdClientOptions;
  /**
   * PostgreSQL: create baton's schema (tables and functions, see docs/postgres.md) when it is missing,
   * on the first connect, under an advisory lock (default true). false for a role that may not run
   * DDL: `connect()` then rejects while the schema is missing (`baton schema <url>` creates it).
   */
  readonly createSchema?: boolean;
  /**
   * Redis: client settings (`tls` for a `rediss://` URL). The user and password go in the URL,
   * `redis://user:password@host:6379/0`, and are never shown (errors, `baton inspect`, logs).
   */
  readonly redis?: RedisClientOptions;
  /**
   * MySQL/MariaDB: client settings (`tls`, the user and password instead of the URL's, `createSchema`).
   * The password is never shown (errors, `baton inspect`, logs).
   */
  readonly mysql?: MysqlClientOptions;
}

/** MySQL/MariaDB client settings (the `mysql` option of `connect`). */
export interface MysqlClientOptions {
  /** TLS settings (`ca`, `cert`, `key`, `rejectUnauthorized`...); none: a plain connection. */
  readonly tls?: ConnectionOptions;
  /** The user, instead of the URL's. */
  readonly user?: string;
  /** The password, instead of the URL's (so that it appears in no URL); never shown. */
  readonly password?: string;
  /**
   * Create baton's tables and procedures (docs/mysql.md) when they are missing, on the first connect
   * (default true); false for a user that may not run DDL (`baton schema <url>` creates them).
   */
  readonly createSchema?: boolean;
}

/** Redis client settings (the `redis` option of `connect`). */
export interface RedisClientOptions {
  /**
   * TLS settings for a `rediss://` URL (`ca`, `cert`, `key`, `rejectUnauthorized`...), passed to the
   * client's TLS connection. Default: Node's defaults (the system's CAs).
   */
  readonly tls?: ConnectionOptions;
  /** The user name (Redis 6 ACLs), instead of the URL's. */
  readonly username?: string;
  /** The password, instead of the URL's (so that it appears in no URL); never shown. */
  readonly password?: string;
}

/** ZooKeeper credentials (the `auth` option of `connect`): sent before any request. */
export interface ZkAuth {
  /** `'digest'`, the only scheme baton sends. */
  readonly scheme: 'digest';
  /** `user:password`; never shown in an error message. */
  readonly credentials: string;
}

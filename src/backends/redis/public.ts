/** What users see of the Redis backend: its `connect()` option key and its type. */
import type { ConnectionOptions } from 'node:tls';

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

/** The `connect()` option only Redis reads. */
export interface RedisConnectOptions {
  /**
   * Redis: client settings (`tls` for a `rediss://` URL). The user and password go in the URL,
   * `redis://user:password@host:6379/0`, and are never shown (errors, `baton inspect`, logs).
   */
  readonly redis?: RedisClientOptions;
}

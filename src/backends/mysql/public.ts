/** What users see of the MySQL/MariaDB backend: its `connect()` option key and its type. */
import type { ConnectionOptions } from 'node:tls';

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

/** The `connect()` option only MySQL/MariaDB reads. */
export interface MysqlConnectOptions {
  /**
   * MySQL/MariaDB: client settings (`tls`, the user and password instead of the URL's, `createSchema`).
   * The password is never shown (errors, `baton inspect`, logs).
   */
  readonly mysql?: MysqlClientOptions;
}

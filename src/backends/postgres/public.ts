/** What users see of the PostgreSQL backend: its `connect()` option key. */

/** The `connect()` option only PostgreSQL reads. */
export interface PostgresConnectOptions {
  /**
   * PostgreSQL: create baton's schema (tables and functions, see docs/postgres.md) when it is missing,
   * on the first connect, under an advisory lock (default true). false for a role that may not run
   * DDL: `connect()` then rejects while the schema is missing (`baton schema <url>` creates it).
   */
  readonly createSchema?: boolean;
}

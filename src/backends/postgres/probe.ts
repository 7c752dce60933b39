import type { Probe } from '../probe.js';

/** PostgreSQL's counts: notifications that reached waiters, entries adopted after a lost enqueue reply, statements, orphans removed. */
export interface PostgresCounters {
  /** NOTIFY messages that reached waiters. */
  notifications: number;
  /** Enqueues that found their entry made by an earlier attempt whose reply was lost. */
  adopted: number;
  /** Statements sent on the sessions' request connections (heartbeats and LISTENs go on the other). */
  statements: number;
  /** The sessions' own orphaned entries deleted (an enqueue attempt applied after the session moved on). */
  orphansRemoved: number;
  /** Queue rows the sessions' enqueues, listings and short reads got back (what a wake costs). */
  queueRowsRead: number;
}

export interface PostgresProbe extends Probe<PostgresCounters, PostgresView> {
  /** Entries and queues waited on right now (`<namespace>/<queue>#<key>`, `<namespace>/<queue>`), with how many sessions wait on each. */
  readonly watches: Map<string, number>;
}

/** What tests may see of a PostgreSQL driver. */
export interface PostgresView {
  /** The server process ids of the session's two connections (main, listening), for pg_terminate_backend; undefined while one is down. */
  backendPids(): Promise<{ main: number | undefined; listen: number | undefined }>;
}

/** Counters nobody reads: a production driver counts into its own. */
export function postgresCounters(): PostgresCounters {
  return { notifications: 0, adopted: 0, statements: 0, orphansRemoved: 0, queueRowsRead: 0 };
}

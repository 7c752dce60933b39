import type { Probe } from '../probe.js';

/**
 * MySQL's counts: wake-ups that reached waiters, entries adopted after a lost enqueue reply, statements
 * on the session's main connection (one per round trip), orphans removed, `KILL QUERY` sent, queue rows read.
 */
export interface MysqlCounters {
  /** Waits ended by their blocker's `GET_LOCK` name coming free (a hint: the rows are read after it). */
  notifications: number;
  /** Enqueues that found their entry made by an earlier attempt whose reply was lost. */
  adopted: number;
  /** Statements sent on the sessions' main connections (each one round trip), the hold checks' apart. */
  statements: number;
  /** The session's checks of its holds (`confirm`, a few per lease while anything is held). */
  confirms: number;
  /** The sessions' own orphaned entries deleted. */
  orphansRemoved: number;
  /** `KILL QUERY` statements sent to end a wait on a wait connection: abandoned, or its connection moved to a nearer wait. */
  killedWaits: number;
  /** Waits woken by a re-read (the backstop, or a wait past the pool's cap) rather than by a name. */
  backstopWakes: number;
  /** Queue rows the sessions' listings received: enqueues, whole listings and short reads (`listBefore`). */
  queueRowsRead: number;
  /** Whole listings of a queue (`CALL baton_list`): a short read's fallback among them. */
  wholeListings: number;
}

/** What tests may see of a MySQL driver. */
export interface MysqlView {
  /** The server's id of the session's main connection (it holds the entries' names), undefined while down. */
  mainThreadId(): number | undefined;
  /** The server's id of the heartbeat's connection, undefined while down. */
  beatThreadId(): number | undefined;
  /** The server ids of the wait pool's connections now up. */
  waitThreadIds(): number[];
}

/** A MySQL driver's probe. */
export interface MysqlProbe extends Probe<MysqlCounters, MysqlView> {
  /** Entries waited on right now (`<namespace>/<queue>#<key>`), with how many sessions wait on each. */
  readonly watches: Map<string, number>;
}

/** Counters nobody reads: a production driver counts into its own. */
export function mysqlCounters(): MysqlCounters {
  return {
    notifications: 0,
    adopted: 0,
    statements: 0,
    confirms: 0,
    orphansRemoved: 0,
    killedWaits: 0,
    backstopWakes: 0,
    queueRowsRead: 0,
    wholeListings: 0,
  };
}

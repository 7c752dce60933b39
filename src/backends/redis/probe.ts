import type { Probe } from '../probe.js';

/** Redis's counts: deletion notifications that reached waiters, backstop reads that woke a waiter, entries adopted, queue entries read. */
export interface RedisCounters {
  /** Published deletions (or queue changes) that reached waiters. */
  notifications: number;
  /** Waits woken by the backstop's re-read rather than by a notification. */
  backstopWakes: number;
  /** Entries an enqueue sent again found written already (its first reply was lost). */
  adopted: number;
  /** Queue entries the sessions' enqueues, listings, short reads and describes got back (what a wake costs). */
  queueEntriesRead: number;
  /** The most enqueues at the tail one session had sent and not yet seen answered (see `EnqueueSlots`). */
  enqueuesInFlightMost: number;
}

export interface RedisProbe extends Probe<RedisCounters, RedisView> {
  /** Channels waited on right now (entry keys and queue channels), with how many sessions wait on each. */
  readonly watches: Map<string, number>;
  /** Published notifications are ignored, as if each were lost (the backstop must wake the waiters). */
  readonly muteNotifications: boolean;
}

/** What tests may see of a Redis driver, and the faults they may cause in it. */
export interface RedisView {
  /** The session's key (`baton:session:<id>`). */
  readonly sessionKey: string;
  /** How many channels have local waiters. */
  readonly waitedChannels: number;
  /** The watchdog stops renewing the session key (the key then expires on the server). */
  stopWatchdog(): void;
}

/** Counters nobody reads: a production driver counts into its own. */
export function redisCounters(): RedisCounters {
  return { notifications: 0, backstopWakes: 0, adopted: 0, queueEntriesRead: 0, enqueuesInFlightMost: 0 };
}

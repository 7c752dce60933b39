import type { Probe } from '../probe.js';

/**
 * Runs inside mkdirp after its look for the deepest existing ancestor, before its creates (tests race
 * it). Declared here, free of any client's types: the testing subpath's declarations reach it.
 */
export type AfterLook = (deepest: string) => Promise<void>;

/**
 * ZooKeeper's counts: watch notifications received (for waiters), entries adopted after a lost reply,
 * orphans removed, enqueues that found their entry alone without a listing (and that tried to, but had
 * to list after all), directories recycled.
 */
export interface ZkCounters {
  /** Watch notifications that reached waiters. */
  notifications: number;
  /** Entries found and kept after a create whose reply was lost. */
  adopted: number;
  /** The session's own orphans deleted by the sweep. */
  orphansRemoved: number;
  /** Enqueues whose create went without a listing (a quiet directory). */
  unlisted: number;
  /** Creates sent unlisted that had to list after all (someone else queued). */
  unlistedMissed: number;
  /** Queue directories recycled near the end of their sequence. */
  recycled: number;
  /** The most enqueues at the tail one session had sent and not yet seen answered (see `EnqueueSlots`). */
  enqueuesInFlightMost: number;
}

export interface ZkProbe extends Probe<ZkCounters, ZkView> {
  /** The sequence from which a queue directory is recycled (see orphans.ts); the production limit is 2^30. */
  readonly recycleFrom: number;
  /** Runs inside the driver's mkdirp, between its look for the deepest ancestor and its creates. */
  readonly afterMkdirpLook: AfterLook | undefined;
}

/** What tests may see of a ZooKeeper driver, and the orphan they may make. */
export interface ZkView {
  /** When the client last wrote a connect request. */
  readonly connectingAt: number;
  /** Whether the heartbeat is a `sync`, which only a member in touch with the leader answers. */
  readonly heartbeatReachesLeader: boolean;
  /** The directories found quiet, each with a watch of this session's on it. */
  readonly quietDirectories: string[];
  /** How many paths have local waiters for their deletion. */
  readonly waitedPaths: number;
  /** Whether listings are searched for this session's orphans. */
  readonly searchesForOrphans: boolean;
  /** To end the session from a second connection, as ZooKeeper allows. */
  sessionCredentials(): { sessionId: Buffer; sessionPassword: Buffer };
  /** Creates a child named like an entry of this session that it does not know of (a late create's leftover). */
  createOrphan(queue: string, kind?: string): Promise<string>;
}

/** Counters nobody reads: a production driver counts into its own. */
export function zkCounters(): ZkCounters {
  return {
    notifications: 0,
    adopted: 0,
    orphansRemoved: 0,
    unlisted: 0,
    unlistedMissed: 0,
    recycled: 0,
    enqueuesInFlightMost: 0,
  };
}

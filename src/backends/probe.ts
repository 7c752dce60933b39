/**
 * The port through which `baton-locks/testing` reaches into a driver: counters, fault hooks, and a view
 * of the driver's state. The test build hands each driver it opens the probe its backend's test kit
 * makes (the descriptor's `testing`, see `connectWith` in connect.ts); the package's own `connect`
 * hands none, so a production session has no test power and shares no state with any other.
 */

/**
 * Runs inside mkdirp after its look for the deepest existing ancestor, before its creates (tests race
 * it). Declared here, free of any client's types: the testing subpath's declarations reach it.
 */
export type AfterLook = (deepest: string) => Promise<void>;

/** A probe for one driver: what it counts into, what it obeys, and where it shows its view. */
export interface Probe<Counters, View> {
  /** Counted into by the driver; the test build shares one object among all its sessions. */
  readonly counters: Counters;
  /** Receives the driver's view once it is open. */
  expose(view: View): void;
}

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

/** etcd's counts, like ZooKeeper's; `confirmRequests`: requests sent to confirm entries. */
export interface EtcdCounters {
  /** Watch events that reached waiters. */
  notifications: number;
  /** Keys found and kept after a put whose reply was lost. */
  adopted: number;
  /** The session's own orphaned keys deleted. */
  orphansRemoved: number;
  /** Requests sent to confirm entries (holds are confirmed on a timer). */
  confirmRequests: number;
  /** Keys the queue reads returned (enqueues, listings, the short reads ahead of an entry). */
  queueKeysRead: number;
  /** Key watches made again after their stream went quiet (a reconnect) or etcd ended them. */
  watchesRemade: number;
}

export interface EtcdProbe extends Probe<EtcdCounters, EtcdView> {
  /** Keys and prefixes watched right now, with how many sessions watch each (clean-state checks). */
  readonly watches: Map<string, number>;
  /** Watch events are ignored, as if every watch stream had gone silent. */
  readonly muteWatchEvents: boolean;
  /** Runs between a change wait's listing and its watch (to compact in between). */
  readonly beforePrefixWatch: (() => Promise<void>) | undefined;
}

/** What tests may see of an etcd driver. */
export interface EtcdView {
  /** The member the lease keepalive stream is dialled to. */
  readonly keepAliveMember: string | undefined;
  /** How many keepalive streams were opened. */
  readonly keepAliveOpens: number;
  /** Whether members that stopped answering are tried last (false if etcd3's internals changed). */
  readonly prefersLiveMembers: boolean;
  /** Watchers etcd3 has sent a cancel for and still waits to hear the end of. */
  readonly watchersClosing: number;
}

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
export function zkCounters(): ZkCounters {
  return { notifications: 0, adopted: 0, orphansRemoved: 0, unlisted: 0, unlistedMissed: 0, recycled: 0 };
}

export function etcdCounters(): EtcdCounters {
  return { notifications: 0, adopted: 0, orphansRemoved: 0, confirmRequests: 0, queueKeysRead: 0, watchesRemade: 0 };
}

export function postgresCounters(): PostgresCounters {
  return { notifications: 0, adopted: 0, statements: 0, orphansRemoved: 0, queueRowsRead: 0 };
}

export function redisCounters(): RedisCounters {
  return { notifications: 0, backstopWakes: 0, adopted: 0, queueEntriesRead: 0 };
}

/**
 * A probe's count of what is watched: `tag` watched once more (+1) or once less (-1), kept only while
 * some session watches it, so that a test's clean-state check finds the map empty.
 */
export function countWatch(watches: Map<string, number>, tag: string, delta: 1 | -1): void {
  const count = (watches.get(tag) ?? 0) + delta;
  if (count > 0) watches.set(tag, count);
  else watches.delete(tag);
}

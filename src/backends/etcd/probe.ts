import type { Probe } from '../probe.js';

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
  /** The most enqueues at the tail one session had sent and not yet seen answered (see `EnqueueSlots`). */
  enqueuesInFlightMost: number;
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

/** Counters nobody reads: a production driver counts into its own. */
export function etcdCounters(): EtcdCounters {
  return {
    notifications: 0,
    adopted: 0,
    orphansRemoved: 0,
    confirmRequests: 0,
    queueKeysRead: 0,
    watchesRemade: 0,
    enqueuesInFlightMost: 0,
  };
}

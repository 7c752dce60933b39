import type { ITxnRequest, ITxnResponse } from 'etcd3';

import { isKeyOfLease, type StoredKey } from './keys.js';
import type { EtcdCounters } from './probe.js';
import { Slots } from './slots.js';

/** What the session's own keys need of their driver. */
export interface OwnEntriesHost {
  /** The lease id in hex, with which every key of ours begins after its queue's prefix. */
  readonly id: string;
  readonly counters: EtcdCounters;
  /** How often the sweeper lists an unsettled queue. */
  readonly sweepEveryMs: number;
  isOpen(): boolean;
  /** Sends a guarded delete once, through the driver's requests. */
  sendTxn(request: ITxnRequest): Promise<ITxnResponse>;
  /** Lists a queue (which removes the orphans it shows). */
  list(queue: string): Promise<unknown>;
}

/**
 * This session's own keys: the slots their names take, the keys that exist, the doubt about deletes of
 * unknown fate, and the orphans (keys of ours nobody stands for) with the sweeper that finds them.
 */
export class OwnEntries {
  readonly #host: OwnEntriesHost;
  readonly slots = new Slots();
  /** Our keys that exist on the server, with the create revision of their incarnation. */
  readonly live = new Map<string, bigint>();
  /** Keys a delete of unknown fate was sent for: their slots are retired for good. */
  readonly doubtful = new Set<string>();
  /** Keys whose enqueue is in flight: a listing may show them before the enqueue has returned. */
  readonly enqueuing = new Set<string>();
  /** Orphans of ours whose guarded delete is in flight. */
  readonly #removing = new Set<string>();
  /**
   * Queues where an enqueue of ours had an attempt of unknown fate, until when to keep looking at them:
   * such an attempt can still be applied after the entry it was for has been released, and it would
   * leave an entry with our lease that nobody waits on, ahead of everyone who queues after it.
   */
  readonly #unsettled = new Map<string, number>();
  #sweeper: NodeJS.Timeout | undefined;

  constructor(host: OwnEntriesHost) {
    this.#host = host;
  }

  /**
   * Deletes the orphans among a queue's keys: keys of ours (they carry our lease id) that no enqueue is
   * in flight for and no handle or waiter stands for: an attempt of an enqueue applied after the entry
   * was released, or an enqueue that failed after its request reached the server. Guarded by their
   * create revision, so that they never block a queue for the rest of the session. Costs nothing when
   * there are none.
   */
  sweepOrphans(prefix: string, kvs: readonly StoredKey[]): void {
    for (const kv of kvs) {
      const key = kv.key.toString();
      if (
        !isKeyOfLease(prefix, key, this.#host.id) ||
        this.live.has(key) ||
        this.enqueuing.has(key) ||
        this.#removing.has(key) ||
        !this.#host.isOpen()
      )
        continue;
      this.#removing.add(key);
      this.#host
        .sendTxn(guardedDelete(Buffer.from(key), BigInt(kv.create_revision)))
        .then(
          (response) => {
            if (response.succeeded) this.#host.counters.orphansRemoved += 1;
          },
          () => undefined, // seen again at the next listing
        )
        .finally(() => this.#removing.delete(key));
    }
  }

  /** Keeps listing `queue` every third of the TTL for a minute: a late attempt shows up there. */
  unsettle(queue: string): void {
    this.#unsettled.set(queue, performance.now() + 60_000);
    if (this.#sweeper !== undefined) return;
    let listing = false;
    this.#sweeper = setInterval(() => {
      if (listing) return; // the last tick's listings are still retrying (a member down)
      listing = true;
      const lists: Promise<unknown>[] = [];
      for (const [unsettled, until] of this.#unsettled) {
        if (performance.now() > until) this.#unsettled.delete(unsettled);
        else lists.push(this.#host.list(unsettled).catch(() => undefined));
      }
      void Promise.all(lists).finally(() => (listing = false));
      if (this.#unsettled.size === 0 || !this.#host.isOpen()) {
        clearInterval(this.#sweeper);
        this.#sweeper = undefined;
      }
    }, this.#host.sweepEveryMs);
    this.#sweeper.unref();
  }

  /** The session ended: the sweeper stops. */
  stop(): void {
    clearInterval(this.#sweeper);
  }
}

/** A delete of exactly the incarnation of the key we created (etcd#22082). */
export function guardedDelete(key: Buffer, createdAt: bigint): ITxnRequest {
  return {
    compare: [{ key, target: 'Create', result: 'Equal', create_revision: createdAt.toString() }],
    success: [{ request_delete_range: { key } }],
    failure: [],
  };
}

import type { IRangeResponse } from 'etcd3';

import { BackstopTimer } from '../backstop-timer.js';
import { sameEntries } from '../waiters.js';
import { entriesFromRange } from './keys.js';
import type { PrefixWait, PrefixWatches } from './prefix-watches.js';
import type { KeyWatches, Watched } from './watches.js';

/** What the backstop needs of its driver. */
export interface BackstopHost {
  isOpen(): boolean;
  /** The keys of a queue's range, retried like every read. */
  listing(prefix: string): Promise<IRangeResponse>;
}

/**
 * The backstop for a watch that stays silent. A member cut off from its peers keeps its watch streams
 * open and never sends the delete (etcd3 does not ask for etcd's require-leader, as Go's client does),
 * and etcd3 watchers are known to go quiet. So while anything is watched, every keepalive interval,
 * the session reads each queue it watches in (one keys-only read per queue, whoever waits in it) and
 * wakes the waiters of every watched key that is gone, and every queue-change wait whose queue has
 * changed. A read made after a wait began shows whatever its watch should have: nothing is woken
 * that a watch would not have woken.
 */
export class WatchBackstop {
  readonly #keys: KeyWatches;
  readonly #prefixes: PrefixWatches;
  readonly #host: BackstopHost;
  readonly #timer: BackstopTimer;

  constructor(keys: KeyWatches, prefixes: PrefixWatches, host: BackstopHost, everyMs: number) {
    this.#keys = keys;
    this.#prefixes = prefixes;
    this.#host = host;
    this.#timer = new BackstopTimer(
      {
        isOpen: () => host.isOpen(),
        idle: () => this.#keys.size === 0 && this.#prefixes.size === 0,
        check: () => this.#check(),
      },
      everyMs,
    );
  }

  /** Starts the checks, unless they run already or the session has ended. */
  ensure(): void {
    this.#timer.ensure();
  }

  stop(): void {
    this.#timer.stop();
  }

  async #check(): Promise<void> {
    // Taken now: only waits that began before the reads below are judged by them.
    const byQueue = new Map<string, { keys: [string, Watched][]; changes: PrefixWait[] }>();
    const of = (prefix: string): { keys: [string, Watched][]; changes: PrefixWait[] } => {
      let waits = byQueue.get(prefix);
      if (waits === undefined) byQueue.set(prefix, (waits = { keys: [], changes: [] }));
      return waits;
    };
    for (const [id, watched] of this.#keys.entries())
      of(watched.key.slice(0, watched.key.lastIndexOf('/') + 1)).keys.push([id, watched]);
    for (const wait of this.#prefixes.values()) of(wait.prefix).changes.push(wait);
    await Promise.all(
      [...byQueue].map(async ([prefix, { keys, changes }]) => {
        const response = await this.#host.listing(prefix);
        const live = new Map(response.kvs.map((kv) => [kv.key.toString(), BigInt(kv.create_revision)]));
        for (const [id, watched] of keys) if (live.get(watched.key) !== watched.createdAt) this.#keys.wake(id);
        if (changes.length === 0) return;
        // Every change wait on one prefix waits in the same queue: its entries are read once.
        const now = entriesFromRange(changes[0]!.queue, prefix, response.kvs);
        for (const wait of changes) if (!sameEntries(now, wait.seen)) wait.wake();
      }),
    );
  }
}

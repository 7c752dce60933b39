import type { Cluster, Redis } from 'ioredis';

import { closeLimitMs } from '../../timing.js';
import type { DriverCore } from '../core.js';
import { RecentReleases } from '../recent-releases.js';
import { fromPromise } from '../requests.js';
import { retriable } from './failures.js';
import { entryKey, livenessKey, type LockKeys } from './keys.js';
import type { LivenessKeys } from './liveness.js';

/** The release script, defined on baton's client with the others (scripts.ts). */
interface ReleaseScript {
  batonRelease(queue: string, session: string, id: string, channel: string, changes: string): Promise<number>;
}

/** What the session's own entries need of their driver. */
export interface OwnEntriesHost {
  /** The session's id, with which every entry id of ours begins. */
  readonly id: string;
  readonly timeoutMs: number;
  readonly client: Redis | Cluster;
  readonly core: DriverCore;
  readonly liveness: LivenessKeys;
  /** The session's own key, deleted last at close. */
  readonly sessionKey: string;
  keysOf(queue: string): LockKeys;
}

/**
 * This session's own entries: their ids, their releases (sent again after a failover may have lost
 * them), and the removal of what is left of them when the session ends.
 */
export class OwnEntries {
  readonly #host: OwnEntriesHost;
  readonly #client: (Redis | Cluster) & ReleaseScript;
  /** Our entries that may be in a queue (sent, or enqueued and not yet withdrawn), by id. */
  readonly #own = new Map<string, string>();
  #next = 0;
  /** Our latest releases (id, lock's key base), to send again after a failover may have lost them. */
  readonly #released = new RecentReleases<[string, string]>();

  constructor(host: OwnEntriesHost) {
    this.#host = host;
    this.#client = host.client as (Redis | Cluster) & ReleaseScript;
  }

  /** A new entry id of ours for `queue`, counted as ours from now on (its enqueue is about to be sent). */
  add(queue: string): string {
    const id = `${this.#host.id}-${(this.#next += 1)}`;
    this.#own.set(id, queue);
    return id;
  }

  has(id: string): boolean {
    return this.#own.has(id);
  }

  /** How many entries of ours may still be in a queue. */
  get size(): number {
    return this.#own.size;
  }

  /** Removes an entry whose enqueue failed, in the background (it may or may not exist). */
  removeLater(queue: string, id: string): void {
    if (!this.#host.core.isOpen) return;
    void this.release(queue, id).catch(() => undefined);
  }

  /** The release script, retried until it is answered or the session ends; idempotent (see `DriverCore.withdraw`). */
  release(queue: string, id: string): Promise<void> {
    const keys = this.#host.keysOf(queue);
    return this.#host.core.withdraw({
      key: `${keys.queue}[${id}]`,
      attempt: () => fromPromise(() => this.#releaseScript(keys.base, id)),
      done: () => {
        this.#own.delete(id);
        this.#host.liveness.left(queue, id);
        this.#released.note([id, keys.base]);
      },
    });
  }

  /** The client's connection closed: releases answered from now on may be lost with it. */
  connectionClosed(): void {
    this.#released.connectionClosed();
  }

  /** The client's connection is back: the releases it may have lost are sent again. */
  connectionBack(): void {
    this.#releaseAgain(this.#released.connectionBack());
  }

  /**
   * On a cluster one node's connection can end while the client stays ready (a primary failing over):
   * the releases of the last seconds are sent again, and wait for the slots to be served again.
   */
  nodeGone(): void {
    this.#releaseAgain(this.#released.recent());
  }

  /** Sends these releases again (see `RecentReleases`), each retried while it fails on the way. */
  #releaseAgain(releases: readonly [string, string][]): void {
    if (!this.#host.core.isOpen) return;
    for (const [id, base] of releases)
      this.#host.core.retry(fromPromise(() => this.#releaseScript(base, id))).catch(() => undefined);
  }

  /** The release script for our entry `id` in the lock whose keys start with `base`. */
  #releaseScript(base: string, id: string): Promise<number> {
    return this.#client.batonRelease(`${base}:q`, this.#host.id, id, entryKey(base, id), `${base}:q`);
  }

  /**
   * Removes what is left of ours (an entry whose enqueue failed, whose release is in the background),
   * the session's keys in its locks and its own key, so that nobody waits for their expiry. One
   * request each, all sent at once (on a cluster they go to several nodes); given up at `until`.
   */
  async removeAll(until: number): Promise<void> {
    const { id: session, liveness, sessionKey } = this.#host;
    const requests: Promise<unknown>[] = [];
    const livenessKeys = new Set(liveness.lockKeys());
    for (const [id, queue] of [...this.#own]) {
      const keys = this.#host.keysOf(queue);
      livenessKeys.add(livenessKey(keys.base, session));
      requests.push(untilAnswered(() => this.#releaseScript(keys.base, id), until));
    }
    for (const key of [...livenessKeys, sessionKey]) requests.push(untilAnswered(() => this.#client.del(key), until));
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(requests),
      new Promise((resolve) => (timer = setTimeout(resolve, Math.max(0, until - Date.now())))),
    ]);
    clearTimeout(timer);
  }

  /**
   * The session was found gone (one of its keys, or the server said so) and its holders were told:
   * our entries are deleted now, with their waiters told, rather than when someone finds them dead
   * (some may not be yet: the session's keys in other locks may live until they expire). Then the
   * connections are dropped (`disconnect`).
   */
  letGo(disconnect: () => void): void {
    // A task later: the holders' own reactions to their aborted signals (an awaited promise goes on
    // only after the task that aborted it) come before their entries are freed for the next holder.
    setImmediate(() => {
      if (this.#own.size === 0 || this.#client.status !== 'ready') return disconnect();
      void this.removeAll(Date.now() + closeLimitMs(this.#host.timeoutMs)).finally(disconnect);
    });
  }
}

/**
 * A request sent again while it fails on the way, until `until` (a wall-clock time): on a cluster a
 * node that just failed over may still be in the client's map of slots, and a close's deletes must
 * not be lost to that.
 */
async function untilAnswered<T>(request: () => Promise<T>, until: number): Promise<T> {
  for (;;) {
    try {
      return await request();
    } catch (error) {
      if (!retriable(error) || Date.now() >= until) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

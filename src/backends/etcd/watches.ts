import type { Etcd3, IKeyValue, Watcher } from 'etcd3';

import type { Abortable, Entry } from '../../../recipes/contract.js';
import { countWatch } from '../probe.js';
import { addWaiter, type Waiter } from '../waiters.js';
import { EtcdEntry } from './keys.js';
import { type EtcdCounters, type EtcdProbe } from './probe.js';

/**
 * Every etcd3 watcher of a session not cancelled yet, created or still being created: one left in
 * etcd3's watch manager when the client closes (its creation still pending) makes the manager reconnect
 * for ever, and keeps the process alive. Also what a test probe sees of them.
 */
export class EtcdWatchers {
  readonly client: Etcd3;
  readonly #live = new Set<Watcher>();
  readonly #probe: EtcdProbe | undefined;
  readonly #counters: EtcdCounters;

  constructor(client: Etcd3, probe: EtcdProbe | undefined, counters: EtcdCounters) {
    this.client = client;
    this.#probe = probe;
    this.#counters = counters;
  }

  track(watcher: Watcher): void {
    this.#live.add(watcher);
  }

  /** etcd ended the watch itself, and etcd3 has let go of it: forgotten, not cancelled (see `KeyWatches.#arm`). */
  forget(watcher: Watcher): void {
    this.#live.delete(watcher);
  }

  /** Cancels a watcher of ours, once. */
  drop(watcher: Watcher): void {
    if (this.#live.delete(watcher)) void watcher.cancel().catch(() => undefined);
  }

  dropAll(): void {
    for (const watcher of [...this.#live]) this.drop(watcher);
  }

  /** A watch event arrived: whether to act on it (a test may mute every watch, as if its stream went silent). */
  heard(): boolean {
    if (this.#probe?.muteWatchEvents === true) return false;
    this.#counters.notifications += 1;
    return true;
  }

  /** A key's watch went quiet or was ended by etcd, and was made again. */
  rewatched(): void {
    this.#counters.watchesRemade += 1;
  }

  /** A key or prefix watched (+1) or no longer (-1), for a test's clean-state check. */
  count(key: string, delta: 1 | -1): void {
    const watches = this.#probe?.watches;
    if (watches !== undefined) countWatch(watches, key, delta);
  }

  /** Watchers etcd3 has sent a cancel for and still waits to hear the end of. */
  get closing(): number {
    return (this.client as unknown as { watchManager: { expectedClosers: Set<unknown> } }).watchManager.expectedClosers
      .size;
  }
}

/** The watch of one incarnation of a key, shared by its local waiters. */
export interface Watched {
  /** The etcd key watched (the map holding this is keyed by incarnation). */
  readonly key: string;
  /** Its create revision: the incarnation waited for. */
  readonly createdAt: bigint;
  readonly waiters: Set<Waiter>;
  watcher?: Watcher | undefined;
}

/** What the key watches need of their driver. */
export interface KeyWatchHost {
  /** The error a new watch meets once the session has ended, or undefined while it is open. */
  endError(): Error | undefined;
  isOpen(): boolean;
  /** A watch failure in the recipes' terms; one saying the lease is gone loses the session first. */
  streamFailed(error: unknown): Error;
  /** The entry's key as it stands now, if still the incarnation the entry stands for. */
  lookUp(entry: Entry): Promise<IKeyValue | undefined>;
}

/**
 * One etcd watch per incarnation of a key (key and create revision), shared by its local waiters. Keys
 * are reused, so a waiter for an earlier incarnation must not join a watch that started after it.
 */
export class KeyWatches {
  readonly #watchers: EtcdWatchers;
  readonly #host: KeyWatchHost;
  readonly #watched = new Map<string, Watched>();

  constructor(watchers: EtcdWatchers, host: KeyWatchHost) {
    this.#watchers = watchers;
    this.#host = host;
  }

  get size(): number {
    return this.#watched.size;
  }

  /** The watches in progress, by incarnation (for the backstop). */
  entries(): IterableIterator<[string, Watched]> {
    return this.#watched.entries();
  }

  /** Resolves when `entry`'s incarnation is deleted; see `Backend.waitGone`. */
  waitGone(entry: Entry, signal: Abortable): Promise<void> {
    signal.throwIfAborted();
    const id = incarnation(entry);
    const watched = this.#watched.get(id) ?? {
      key: entry.key,
      createdAt: EtcdEntry.createdAt(entry),
      waiters: new Set<Waiter>(),
    };
    const first = !this.#watched.has(id);
    this.#watched.set(id, watched);
    const waiting = addWaiter(watched.waiters, signal, () => {
      if (watched.waiters.size === 0) this.#unwatch(id, watched);
    });
    if (first) this.#arm(entry, watched);
    return waiting;
  }

  /** Wakes the waiters of an incarnation (it is gone). */
  wake(id: string): void {
    const watched = this.#watched.get(id);
    if (watched === undefined) return;
    this.#unwatch(id, watched);
    for (const waiter of watched.waiters) waiter.resolve();
  }

  /** The session ended: every waiter fails with `reason`. */
  failAll(reason: Error): void {
    for (const id of [...this.#watched.keys()]) this.#fail(id, reason);
  }

  /**
   * Watches the key from etcd's head revision, then reads it once that watch exists: a delete before
   * the watch is seen by the read, one after it by the watch. A watch from the revision after our read
   * would miss nothing either, but etcd serves one that starts at or below its head from a catch-up loop
   * that runs every 100 ms (late wakes under contention), and one whose start is compacted away is
   * cancelled by etcd on its own, racing any cancel of ours: etcd3 throws on the second answer, out of
   * reach of any handler (an unhandled rejection).
   *
   * The watcher is made and its listeners attached in one go (not after `create()` resolves, a tick
   * later): etcd may send the creation and a delete together.
   */
  #arm(entry: Entry, watched: Watched): void {
    const id = incarnation(entry);
    const ended = this.#host.endError();
    if (ended !== undefined) return this.#fail(id, ended);
    const watcher = this.#watchers.client.watch().key(entry.key).watcher();
    this.#watchers.track(watcher);
    let created = false;
    watcher.on('connected', () => {
      if (created) return; // created again by etcd3 after a reconnect: the rewatch below replaced it
      created = true;
      if (this.#watched.get(id) !== watched) return this.#watchers.drop(watcher);
      watched.watcher = watcher;
      this.#watchers.count(entry.key, 1);
      this.#lookAfterWatch(entry, watched, watcher);
    });
    watcher.on('delete', () => {
      if (this.#watchers.heard()) this.wake(id);
    });
    // etcd3 watchers can go quiet after a reconnect, and are remade from the head (a delete during the
    // outage unseen): watched again, and looked at.
    watcher.on('disconnected', () => created && this.#rewatch(entry, watched, watcher));
    watcher.on('error', (error: unknown) => {
      if (created) {
        // etcd ended the watch itself (a permission withdrawn), and etcd3 has let go of it already:
        // forgotten, not cancelled, since a cancel would wait for an answer etcd never sends (the
        // watcher would stay in etcd3's closing set until a reconnect).
        this.#watchers.forget(watcher);
        return this.#rewatch(entry, watched, watcher);
      }
      this.#watchers.drop(watcher);
      // Only if the wait it was made for is still the current one for this incarnation.
      if (this.#watched.get(id) === watched) this.#fail(id, this.#host.streamFailed(error));
    });
  }

  /** The watcher went quiet or was ended by etcd: replaced by a new watch from the head, then a look. */
  #rewatch(entry: Entry, watched: Watched, watcher: Watcher): void {
    if (watched.watcher !== watcher || !this.#host.isOpen()) return;
    watched.watcher = undefined;
    this.#watchers.count(entry.key, -1);
    this.#watchers.drop(watcher);
    this.#watchers.rewatched();
    this.#arm(entry, watched);
  }

  /** The watch exists: the entry read once more, since it may have gone before. */
  #lookAfterWatch(entry: Entry, watched: Watched, watcher: Watcher): void {
    const id = incarnation(entry);
    this.#host.lookUp(entry).then(
      (kv) => {
        if (kv === undefined && watched.watcher === watcher) this.wake(id);
      },
      (error: unknown) => {
        if (watched.watcher === watcher) this.#fail(id, error);
      },
    );
  }

  #fail(id: string, error: unknown): void {
    const watched = this.#watched.get(id);
    if (watched === undefined) return;
    this.#unwatch(id, watched);
    for (const waiter of watched.waiters) waiter.reject(error);
  }

  #unwatch(id: string, watched: Watched): void {
    if (this.#watched.get(id) === watched) this.#watched.delete(id);
    if (watched.watcher === undefined) return;
    this.#watchers.count(watched.key, -1);
    this.#watchers.drop(watched.watcher);
    watched.watcher = undefined;
  }
}

/** The watch id of an entry: its key and the create revision of the incarnation it stands for. */
function incarnation(entry: Entry): string {
  return `${entry.key}@${EtcdEntry.createdAt(entry)}`;
}

import zookeeper from 'node-zookeeper-client';

import type { Abortable, Entry } from '../../../recipes/contract.js';
import { fromPromise, type Start } from '../requests.js';
import { addWaiter, sameEntries, settleWaiters, type Waiter } from '../waiters.js';
import { watchChildren, watchDataStart, type ZkClient, zkLong } from './client.js';

/** What the watches need of their driver. */
export interface WatchHost {
  readonly client: ZkClient;
  /** Sends a request through the driver's pipeline, retried while only the connection failed. */
  retry<T>(request: Start<T>): Promise<T>;
  /** The entries of a directory's listing (see the driver's `#parseAndSweep`: it also reports foreign children and sweeps orphans). */
  entriesOf(queue: string, dir: string, children: readonly string[], czxid: bigint): Entry[];
  /** Counts a watch notification received. */
  notified(): void;
}

/**
 * The session's watches: one server watch per watched entry (its deletion), and one per watched queue
 * directory (a change of its children), each shared by every local waiter on it. The watcher function
 * is kept per path, so that arming again (after a reconnect) registers nothing twice: the client keeps
 * one copy of a function per path, the server one watch per path and session.
 */
export class Watches {
  readonly #host: WatchHost;
  readonly #waiters = new Map<string, Set<Waiter>>();
  /** The watcher function registered for each watched path. */
  readonly #watchers = new Map<string, (event: zookeeper.Event) => void>();
  /** Waiters for a change of a queue directory's children, keyed by the directory. */
  readonly #dirWaiters = new Map<string, Set<Waiter>>();
  /** The one watcher function per directory: the client then keeps one registration per path. */
  readonly #dirWatchers = new Map<string, (event: zookeeper.Event) => void>();

  constructor(host: WatchHost) {
    this.#host = host;
  }

  /** How many paths have local waiters for their deletion. */
  get waitedPaths(): number {
    return this.#waiters.size;
  }

  /** Resolves when `entry` is deleted (or already is); see `Backend.waitGone`. */
  waitGone(entry: Entry, signal: Abortable): Promise<void> {
    signal.throwIfAborted();
    const waiters = this.#waiters.get(entry.key) ?? new Set<Waiter>();
    const first = waiters.size === 0;
    this.#waiters.set(entry.key, waiters);
    // A waiter that gives up leaves nothing behind: the path's last one takes its set with it (the
    // server's watch stays until it fires; it is not armed again after a reconnect).
    const waiting = addWaiter(waiters, signal, () => {
      if (waiters.size === 0 && this.#waiters.get(entry.key) === waiters) this.#waiters.delete(entry.key);
    });
    if (first) this.#arm(entry.key);
    return waiting;
  }

  /** Resolves when the queue in `dir` differs from `seen`; see `Backend.waitChange`. */
  waitChange(queue: string, dir: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    signal.throwIfAborted();
    const waiters = this.#dirWaiters.get(dir) ?? new Set<Waiter>();
    this.#dirWaiters.set(dir, waiters);
    const waiting = addWaiter(waiters, signal, () => {
      if (waiters.size === 0 && this.#dirWaiters.get(dir) === waiters) this.#dirWaiters.delete(dir);
    });
    this.#armDir(queue, dir, seen);
    return waiting;
  }

  /**
   * After a reconnect the client re-registers its watches (SetWatches from the last zxid it saw, so a
   * delete in between fires). That is not taken on trust: every watched path is read again with its
   * watch, which wakes the waiters of a node that is gone and leaves a watch on one that is not.
   */
  recheck(): void {
    for (const path of this.#waiters.keys()) this.#arm(path);
    // A directory's waiters list again themselves: they are woken (no change is missed that way).
    for (const dir of [...this.#dirWaiters.keys()]) settleWaiters(this.#dirWaiters, dir);
  }

  /** The session ended: every waiter fails with `error`. */
  failAll(error: unknown): void {
    for (const path of [...this.#waiters.keys()]) settleWaiters(this.#waiters, path, { error });
    for (const dir of [...this.#dirWaiters.keys()]) settleWaiters(this.#dirWaiters, dir, { error });
  }

  #arm(path: string): void {
    let onEvent = this.#watchers.get(path);
    if (onEvent === undefined) {
      const watcher = (event: zookeeper.Event): void => {
        this.#host.notified();
        if (this.#watchers.get(path) === watcher) this.#watchers.delete(path); // the client fires a watcher once
        if (event.getType() === zookeeper.Event.NODE_DELETED) settleWaiters(this.#waiters, path);
        else if (this.#waiters.has(path)) this.#arm(path);
      };
      this.#watchers.set(path, (onEvent = watcher));
    }
    const watcher = onEvent;
    this.#host.retry(watchDataStart(this.#host.client, path, watcher)).then(
      (present) => {
        if (!present) settleWaiters(this.#waiters, path);
      },
      (error: unknown) => settleWaiters(this.#waiters, path, { error }),
    );
  }

  /**
   * Lists the directory with a watch on it; wakes its waiters if the listing already differs from
   * `seen`. Every waiter of the directory is woken by the next change: each lists again for itself. A
   * ZooKeeper 3.4 client cannot remove a watch, so a waiter that gives up leaves the server's watch in
   * place until that next change; the shared watcher function keeps it to one per directory.
   */
  #armDir(queue: string, dir: string, seen: readonly Entry[]): void {
    let watcher = this.#dirWatchers.get(dir);
    if (watcher === undefined) {
      const onEvent = (): void => {
        this.#host.notified();
        if (this.#dirWatchers.get(dir) === onEvent) this.#dirWatchers.delete(dir);
        settleWaiters(this.#dirWaiters, dir);
      };
      this.#dirWatchers.set(dir, (watcher = onEvent));
    }
    const registered = watcher;
    this.#host.retry(fromPromise(() => watchChildren(this.#host.client, dir, registered))).then(
      (listed) => {
        let now: Entry[];
        try {
          now = listed === null ? [] : this.#host.entriesOf(queue, dir, listed.children, zkLong(listed.stat.czxid));
        } catch (error) {
          return settleWaiters(this.#dirWaiters, dir, { error }); // a queue refused (its sequence wrapped)
        }
        if (!sameEntries(now, seen)) settleWaiters(this.#dirWaiters, dir);
      },
      (error: unknown) => settleWaiters(this.#dirWaiters, dir, { error }),
    );
  }
}

import type { Abortable, Entry } from '../../../recipes/contract.js';
import type { DriverCore } from '../core.js';
import { addWaiter, sameEntries, settleWaiters, type Waiter } from '../waiters.js';
import type { MysqlCounters } from './probe.js';
import type { PooledWait, WaitPool } from './wait-pool.js';

/** What the waits need of their driver. */
export interface WatchesHost {
  readonly core: DriverCore;
  readonly pool: WaitPool;
  readonly namespace: string;
  readonly counters: MysqlCounters;
  /** Counts a tag's waits in the probe (tests look for watches left behind). */
  watched?(tag: string, delta: 1 | -1): void;
  /** The `GET_LOCK` name of an entry's key. */
  nameOf(key: string): string;
  /** Which of these entries (by key) exist and belong to a live session. */
  live(keys: readonly string[]): Promise<Set<string>>;
  list(queue: string): Promise<readonly Entry[]>;
}

/** One waited entry: its local waiters, shared by one loop of waits on its name. */
interface Watch {
  readonly waiters: Set<Waiter>;
  readonly tag: string;
  /** The waited entry's order: the pool gives its connections to the waits nearest the head. */
  readonly rank: bigint;
  current: PooledWait | undefined;
  /** Ends the pause between two looks early (the last waiter left, or the session ended). */
  wakePause: (() => void) | undefined;
}

/**
 * The session's waits. For an entry's delete: a loop that blocks in `GET_LOCK(<the entry's name>)` on
 * a connection of the wait pool (the holder's connection holds the name until its withdraw, after the
 * delete), then reads the row: gone, the waiters wake; still there (the name was free: the holder's
 * connection broke, or could not take it), the loop looks again at the backstop's pace. A wait that
 * gets no pool connection in time (they went to waits nearer the head) only re-reads. `GET_LOCK` is a hint: only the rows and leases decide. A queue's change
 * (an election observing an empty queue) is looked for at the backstop's pace.
 */
export class Watches {
  readonly #host: WatchesHost;
  readonly #everyMs: number;
  readonly #watches = new Map<string, Watch>();
  readonly #changes = new Map<string, Set<Waiter>>();
  readonly #changeTags = new Map<Set<Waiter>, string>();
  #batch: { keys: Set<string>; result: Promise<Set<string>> } | undefined;
  #tick: Promise<void> | undefined;

  constructor(host: WatchesHost, everyMs: number) {
    this.#host = host;
    this.#everyMs = everyMs;
  }

  waitGone(entry: Entry, signal: Abortable): Promise<void> {
    const { core, namespace } = this.#host;
    signal.throwIfAborted();
    const end = core.endError();
    if (end !== undefined) return Promise.reject(end);
    // By key: unique in the database, where a token is unique only within its queue.
    const id = entry.key;
    let watch = this.#watches.get(id);
    if (watch === undefined) {
      watch = {
        waiters: new Set(),
        tag: `${namespace}/${entry.queue}#${entry.key}`,
        rank: entry.order,
        current: undefined,
        wakePause: undefined,
      };
      this.#watches.set(id, watch);
      this.#host.watched?.(watch.tag, 1);
      void this.#loop(id, watch, this.#host.nameOf(entry.key));
    }
    const waiters = watch;
    return addWaiter(watch.waiters, signal, () => {
      if (waiters.waiters.size === 0) this.#stop(id, waiters);
    });
  }

  async #loop(id: string, watch: Watch, name: string): Promise<void> {
    const seconds = Math.max(0.05, this.#everyMs / 1_000);
    let woken = false;
    let nameHeld = true;
    while (this.#watches.get(id) === watch && this.#host.core.isOpen) {
      const startedAt = performance.now();
      const wait = this.#host.pool.wait(name, seconds, watch.rank);
      watch.current = wait;
      const got = wait === undefined ? undefined : await wait.got;
      watch.current = undefined;
      // The pool closed, or a timeout answered early (a server that rounds fractional seconds down).
      if (wait === undefined || (got === 0 && performance.now() - startedAt < this.#everyMs / 2))
        await this.#pause(watch);
      if (this.#watches.get(id) !== watch) return;
      let live: boolean;
      try {
        live = await this.#isLive(id);
      } catch {
        await this.#pause(watch);
        continue;
      }
      if (!live) {
        woken = true;
        if (got === 1 && nameHeld) this.#host.counters.notifications += 1;
        else this.#host.counters.backstopWakes += 1;
        break;
      }
      // The name was free while the entry lives: its holder does not hold it now; look again later
      // (a later free name is then no sign of a release: that wake counts as the backstop's).
      if (got === 1) nameHeld = false;
      if (got === 1 || got === null) await this.#pause(watch);
    }
    if (woken && this.#watches.get(id) === watch) {
      this.#stop(id, watch);
      for (const waiter of [...watch.waiters]) waiter.resolve();
      watch.waiters.clear();
    }
  }

  /**
   * Whether an entry's row lives: the looks of every watch asked for in one turn go as one statement
   * (the watches past the pool's cap look at the same ticks), so the cost is one read per tick, not one
   * per waited entry.
   */
  #isLive(key: string): Promise<boolean> {
    let batch = this.#batch;
    if (batch === undefined) {
      const keys = new Set<string>();
      const result = new Promise<void>((resolve) => setImmediate(resolve)).then(() => {
        this.#batch = undefined;
        return this.#host.live([...keys]);
      });
      batch = { keys, result };
      this.#batch = batch;
    }
    batch.keys.add(key);
    return batch.result.then((live) => live.has(key));
  }

  /** A pause until the next shared tick (every `everyMs`), ended early when the watch stops. */
  #pause(watch: Watch): Promise<void> {
    this.#tick ??= new Promise<void>((resolve) =>
      setTimeout(() => {
        this.#tick = undefined;
        resolve();
      }, this.#everyMs),
    );
    const tick = this.#tick;
    return new Promise((resolve) => {
      const done = (): void => {
        watch.wakePause = undefined;
        resolve();
      };
      watch.wakePause = done;
      void tick.then(done);
    });
  }

  #stop(id: string, watch: Watch): void {
    if (this.#watches.get(id) !== watch) return;
    this.#watches.delete(id);
    this.#host.watched?.(watch.tag, -1);
    watch.current?.cancel();
    watch.wakePause?.();
  }

  /** Waits for `queue` to differ from `seen`, looking at the backstop's pace. */
  waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    const { core } = this.#host;
    signal.throwIfAborted();
    const end = core.endError();
    if (end !== undefined) return Promise.reject(end);
    const key = `${queue}\n${seen.map((e) => e.key).join(',')}`;
    let waiters = this.#changes.get(key);
    const first = waiters === undefined;
    waiters ??= new Set();
    this.#changes.set(key, waiters);
    const set = waiters;
    if (first) this.#countChange(set, `${this.#host.namespace}/${queue}`);
    const done = addWaiter(set, signal, () => {
      if (set.size > 0) return;
      if (this.#changes.get(key) === set) this.#changes.delete(key);
      this.#uncountChange(set);
    });
    if (first) void this.#lookForChange(key, set, queue, seen).finally(() => this.#uncountChange(set));
    return done;
  }

  /** Counts a queue-change wait in the probe while anyone waits (tests look for watches left behind). */
  #countChange(set: Set<Waiter>, tag: string): void {
    this.#changeTags.set(set, tag);
    this.#host.watched?.(tag, 1);
  }

  #uncountChange(set: Set<Waiter>): void {
    const tag = this.#changeTags.get(set);
    if (tag === undefined) return;
    this.#changeTags.delete(set);
    this.#host.watched?.(tag, -1);
  }

  async #lookForChange(key: string, set: Set<Waiter>, queue: string, seen: readonly Entry[]): Promise<void> {
    const stillWaited = (): boolean => this.#changes.get(key) === set && this.#host.core.isOpen;
    while (stillWaited()) {
      const now = await this.#host.list(queue).catch(() => undefined);
      if (now !== undefined && !sameEntries(now, seen) && stillWaited()) {
        settleWaiters(this.#changes, key);
        return;
      }
      await new Promise((resolve) => setTimeout(resolve, this.#everyMs));
    }
  }

  /** The session ended: every wait fails with `reason`. */
  failAll(reason: Error): void {
    for (const [id, watch] of [...this.#watches]) {
      this.#stop(id, watch);
      for (const waiter of [...watch.waiters]) waiter.reject(reason);
      watch.waiters.clear();
    }
    for (const [key, set] of [...this.#changes]) {
      settleWaiters(this.#changes, key, { error: reason });
      this.#uncountChange(set);
    }
  }
}

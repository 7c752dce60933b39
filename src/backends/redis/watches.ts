import type { Abortable, Entry } from '../../../recipes/contract.js';
import { enlist, sameEntries, type Waiter } from '../waiters.js';
import type { RedisCounters, RedisProbe } from './probe.js';
import type { SubscriberLink } from './subscriber.js';

/** What the notifications need of their driver. */
export interface WatchesHost {
  isOpen(): boolean;
  endError(): Error | undefined;
  /** Whether the entry is still in its queue (read after the subscription stands). */
  exists(entry: Entry): Promise<boolean>;
  /** The live entries of a queue (the list script: expired sessions' entries dropped and told). */
  list(queue: string): Promise<readonly Entry[]>;
  /** For each entry, whether it is gone (the gone script: an expired session's entry dropped and told). */
  gone(entries: readonly Entry[]): Promise<readonly boolean[]>;
  /** The channel told of every change of a queue. */
  changesChannel(queue: string): string;
  /** A failure as the session's requests report it (credentials on a client error scrubbed). */
  mapFailure(error: unknown): Error;
}

/** The change waits of one queue's channel: what each of its waiters saw. */
interface ChangeWait {
  readonly queue: string;
  readonly seen: Map<Waiter, readonly Entry[]>;
}

/** How long a wait found done by the backstop is given for its notification, which may be on its way. */
const GRACE_MS = 20;

/**
 * The session's waits, on its subscriber connection: a waiter subscribes to the channel of the entry
 * it waits for (the entry's key), which the script that deletes the entry publishes to, so that one
 * release wakes only the waiters of that entry. Subscriptions are shared by the local waiters of a
 * channel and dropped with the last one. A bounded re-read (the backstop) covers a notification lost
 * with a connection and the entries of a session that expired with nobody deleting them: while
 * anything waits, every quarter of the session timeout, one gone script looks at the entries waited
 * for (only those: its cost does not grow with the queues), dropping and telling those of expired
 * sessions, and each queue with a change wait is read with the list script; a wait found done is
 * woken a moment later unless its notification came meanwhile: within a quarter of the timeout of a
 * lost notification.
 */
export class Watches {
  readonly #subscriber: SubscriberLink;
  readonly #host: WatchesHost;
  readonly #counters: RedisCounters;
  readonly #watches: Map<string, number> | undefined;
  /** A test's probe (absent in production): it may mute the messages. */
  readonly #probe: RedisProbe | undefined;
  readonly #everyMs: number;
  readonly #waiters = new Map<string, Set<Waiter>>();
  /** What each waited channel stands for: an entry, or a queue whose change is awaited. */
  readonly #targets = new Map<string, Entry | ChangeWait>();
  /** The subscription of each channel, once asked for. */
  readonly #subscribed = new Map<string, Promise<unknown>>();
  #timer: NodeJS.Timeout | undefined;
  #checking = false;

  constructor(
    subscriber: SubscriberLink,
    host: WatchesHost,
    counters: RedisCounters,
    probe: RedisProbe | undefined,
    everyMs: number,
  ) {
    this.#subscriber = subscriber;
    this.#host = host;
    this.#counters = counters;
    this.#watches = probe?.watches;
    this.#probe = probe;
    this.#everyMs = everyMs;
  }

  get size(): number {
    return this.#waiters.size;
  }

  /** Resolves once `entry` is deleted (see `Backend.waitGone`). */
  waitGone(entry: Entry, signal: Abortable): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const { waiting, waiter } = this.#wait(entry.key, entry, signal);
    if (waiter === undefined) return waiting;
    void this.#armed(entry.key)
      .then(async () => {
        if (this.#waiters.has(entry.key) && !(await this.#host.exists(entry))) this.#wake(entry.key);
      })
      .catch((error: unknown) => this.#fail(entry.key, error));
    return waiting;
  }

  /** Resolves once the queue differs from `seen` (see `Backend.waitChange`). */
  waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const channel = this.#host.changesChannel(queue);
    const { waiting, waiter } = this.#wait(channel, { queue, seen: new Map() }, signal);
    if (waiter === undefined) return waiting;
    const target = this.#targets.get(channel) as ChangeWait;
    target.seen.set(waiter, seen);
    void this.#armed(channel)
      .then(async () => {
        // Each observer against what it saw itself: observers of one queue may have seen different listings.
        if (target.seen.has(waiter) && !sameEntries(await this.#host.list(queue), seen)) this.#wakeOne(channel, waiter);
      })
      .catch((error: unknown) => this.#fail(channel, error));
    return waiting;
  }

  /** A waiter on `channel` (the channel registered with `target` if it is new), settled as the channel is. */
  #wait(channel: string, target: Entry | ChangeWait, signal: Abortable): { waiting: Promise<void>; waiter?: Waiter } {
    const ended = this.#host.endError();
    if (ended !== undefined) return { waiting: Promise.reject(ended) };
    let waiters = this.#waiters.get(channel);
    if (waiters === undefined) {
      this.#waiters.set(channel, (waiters = new Set()));
      this.#targets.set(channel, target);
    }
    const set = waiters;
    // The caller checked the signal: enlisting cannot throw here.
    const { done: waiting, waiter } = enlist(set, signal, () => this.#left(channel, set, waiter));
    this.#ensureBackstop();
    return { waiting, waiter };
  }

  /** A waiter left its channel (gave up): the channel goes with its last waiter. */
  #left(channel: string, set: Set<Waiter>, waiter: Waiter): void {
    if (this.#waiters.get(channel) !== set) return;
    const target = this.#targets.get(channel);
    if (target !== undefined && 'seen' in target) target.seen.delete(waiter);
    if (set.size === 0) this.#forget(channel);
  }

  /** Wakes one waiter of a channel (a change wait whose own listing differs). */
  #wakeOne(channel: string, waiter: Waiter): void {
    const set = this.#waiters.get(channel);
    if (set === undefined || !set.delete(waiter)) return;
    this.#left(channel, set, waiter);
    waiter.resolve();
  }

  /** The subscriber connection is new and holds every channel again: messages published meanwhile were lost, so look now. */
  reconnected(): void {
    void this.check(true);
  }

  /** The channel's subscription, asked for once. */
  #armed(channel: string): Promise<unknown> {
    let subscribed = this.#subscribed.get(channel);
    if (subscribed === undefined) {
      subscribed = this.#subscriber.subscribe(channel).then(() => {
        // Shown to tests once the server has the subscription; #forget takes it back after this ran.
        this.#watches?.set(channel, (this.#watches.get(channel) ?? 0) + 1);
      });
      this.#subscribed.set(channel, subscribed);
    }
    return subscribed;
  }

  /** A message on the subscriber connection. */
  onMessage(channel: string): void {
    if (this.#probe?.muteNotifications === true || !this.#waiters.has(channel)) return;
    this.#counters.notifications += 1;
    this.#wake(channel);
  }

  #wake(channel: string): void {
    const waiters = this.#waiters.get(channel);
    if (waiters === undefined) return;
    this.#forget(channel);
    for (const waiter of waiters) waiter.resolve();
  }

  /**
   * The wait could not be set up (the session ended meanwhile, the subscriber's AUTH failed): its
   * waiters fail with the error as the failure map makes it (a client's error never reaches them raw:
   * ioredis puts AUTH's arguments, the password, on the error of every command it fails with it).
   */
  #fail(channel: string, error: unknown): void {
    const waiters = this.#waiters.get(channel);
    if (waiters === undefined) return;
    this.#forget(channel);
    const mapped = this.#host.mapFailure(error);
    for (const waiter of waiters) waiter.reject(mapped);
  }

  /** The channel has no waiter any more: its subscription goes. */
  #forget(channel: string): void {
    this.#waiters.delete(channel);
    this.#targets.delete(channel);
    const subscribed = this.#subscribed.get(channel);
    if (subscribed === undefined) return;
    this.#subscribed.delete(channel);
    void subscribed.then(
      () => {
        const left = (this.#watches?.get(channel) ?? 1) - 1;
        if (left > 0) this.#watches?.set(channel, left);
        else this.#watches?.delete(channel);
      },
      () => undefined,
    );
    if (this.#host.isOpen()) this.#subscriber.unsubscribe(channel);
  }

  #ensureBackstop(): void {
    if (this.#timer !== undefined || !this.#host.isOpen()) return;
    this.#timer = setInterval(() => {
      if (!this.#host.isOpen() || this.#waiters.size === 0) {
        clearInterval(this.#timer);
        this.#timer = undefined;
        return;
      }
      void this.check();
    }, this.#everyMs);
    this.#timer.unref();
  }

  /**
   * Looks at every waited entry (the gone script) and every queue with a change wait (the list script),
   * and wakes every wait whose entry is gone or whose queue changed: at once after the subscriber
   * reconnected (messages were lost), else a moment later, since a notification published before this
   * read may still be on its way on the other connection (it then wakes the wait and is counted).
   */
  async check(immediate = false): Promise<void> {
    if (this.#checking || this.#waiters.size === 0 || !this.#host.isOpen()) return;
    this.#checking = true;
    try {
      const entries: [string, Entry][] = [];
      const changes: [string, ChangeWait][] = [];
      for (const [channel, target] of this.#targets) {
        if ('seen' in target) changes.push([channel, target]);
        else entries.push([channel, target]);
      }
      const done: [string, Entry][] = [];
      const changed: [string, Waiter][] = [];
      await Promise.all([
        entries.length === 0
          ? undefined
          : this.#host.gone(entries.map(([, entry]) => entry)).then((gone) => {
              gone.forEach((isGone, index) => isGone && done.push(entries[index]!));
            }),
        ...changes.map(async ([channel, target]) => {
          const now = await this.#host.list(target.queue);
          for (const [waiter, seen] of target.seen) if (!sameEntries(now, seen)) changed.push([channel, waiter]);
        }),
      ]);
      if (done.length === 0 && changed.length === 0) return;
      if (!immediate) await new Promise((resolve) => setTimeout(resolve, GRACE_MS));
      for (const [channel, target] of done) {
        if (this.#targets.get(channel) !== target) continue; // woken meanwhile by its notification, or given up
        this.#counters.backstopWakes += 1;
        this.#wake(channel);
      }
      for (const [channel, waiter] of changed) {
        if (!this.#waiters.get(channel)?.has(waiter)) continue;
        this.#counters.backstopWakes += 1;
        this.#wakeOne(channel, waiter);
      }
    } catch {
      // the next round tries again; the session's end fails the waiters
    } finally {
      this.#checking = false;
    }
  }

  /** The session ended: every wait fails with `reason`, the timer stops. */
  failAll(reason: Error): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    for (const channel of [...this.#waiters.keys()]) this.#fail(channel, reason);
  }
}

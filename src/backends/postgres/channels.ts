import { createHash } from 'node:crypto';

import type { Abortable } from '../../../recipes/contract.js';
import { addWaiter, settleWaiters, type Waiter } from '../waiters.js';

/** The channel the delete of entry `token` notifies (the schema's trigger names it so). */
export function entryChannel(schema: string, token: bigint): string {
  return `${schema}.e${token}`;
}

/** The channel of a queue with observers (the schema's `queue_channel`). */
export function queueChannel(schema: string, namespace: string, queue: string): string {
  return `${schema}.q${createHash('md5').update(`${namespace}/${queue}`).digest('hex').slice(0, 16)}`;
}

/** A quoted identifier for LISTEN/UNLISTEN (channel names are ours: no quote inside). */
function quoted(channel: string): string {
  return `"${channel}"`;
}

/** What the channels need of the session's listening connection. */
export interface ChannelHost {
  /**
   * Sends LISTEN/UNLISTEN once on the listening connection, in the order asked (never again after a
   * failure: a statement sent again after a newer one would undo it; `relisten` restores the set after
   * the connection is made again). Rejects if the connection breaks.
   */
  send(statement: string): Promise<void>;
  /**
   * Called when the server starts listening on a channel that has local waiters (its LISTEN answered),
   * and when such a channel loses its last waiter (a probe's count of watches).
   */
  watched?(tag: string, delta: 1 | -1): void;
}

/**
 * The channels this session listens on, each with its local waiters: one LISTEN per channel however
 * many waiters share it, an UNLISTEN when the last one leaves. A notification settles every waiter of
 * its channel. After the listening connection was made again, `relisten` listens on every channel
 * once more (notifications sent meanwhile are lost: the caller then checks what it waits for).
 */
export class Channels {
  readonly #host: ChannelHost;
  readonly #waiters = new Map<string, Set<Waiter>>();
  readonly #tags = new Map<string, string>();
  /**
   * Per channel, settled once the server listens on it: by its LISTEN, or, if that failed with its
   * connection, by the `relisten` on the next one. Every waiter of the channel waits for the same one.
   */
  readonly #listening = new Map<string, Listening>();
  /** Notifications that reached waiters. */
  notifications = 0;

  constructor(host: ChannelHost) {
    this.#host = host;
  }

  /** How many channels have local waiters. */
  get size(): number {
    return this.#waiters.size;
  }

  /** Whether `channel` has local waiters. */
  has(channel: string): boolean {
    return this.#tags.has(channel);
  }

  /**
   * Adds a waiter on `channel`: its promise resolves when the channel is notified (or `wake` is
   * called), rejects with the signal's reason or with `fail`'s error. `listening` settles once the
   * server listens for it (from then on no notification is missed).
   */
  wait(channel: string, tag: string, signal: Abortable): { done: Promise<void>; listening: Promise<void> } {
    let set = this.#waiters.get(channel);
    if (set === undefined) {
      set = new Set();
      this.#waiters.set(channel, set);
      this.#tags.set(channel, tag);
      const listening = new Listening();
      this.#listening.set(channel, listening);
      // A failure leaves it pending: the connection is made again, and `relisten` settles it.
      this.#host.send(`LISTEN ${quoted(channel)}`).then(
        () => this.#listened(channel, listening),
        () => undefined,
      );
    }
    const listening = this.#listening.get(channel)?.promise ?? Promise.resolve();
    const waiters = set;
    const done = addWaiter(waiters, signal, () => {
      if (waiters.size === 0 && this.#waiters.get(channel) === waiters) this.#forget(channel);
    });
    return { done, listening };
  }

  /** A NOTIFY arrived. */
  notified(channel: string): void {
    if (this.#waiters.has(channel)) this.notifications += 1;
    this.wake(channel);
  }

  /** Resolves every waiter of `channel` and stops listening on it. */
  wake(channel: string): void {
    if (!this.#waiters.has(channel)) return;
    this.#forget(channel, false);
    settleWaiters(this.#waiters, channel);
  }

  /**
   * The server listens on `channel` for the waiters `listening` stands for: it settles, and the probe
   * counts the channel. Not if those waiters left meanwhile (an UNLISTEN follows this LISTEN then, and
   * a newer wait on the channel waits for the LISTEN sent after it).
   */
  #listened(channel: string, listening: Listening): void {
    if (this.#listening.get(channel) !== listening || listening.done) return;
    listening.resolve();
    const tag = this.#tags.get(channel);
    if (tag !== undefined) this.#host.watched?.(tag, 1);
  }

  #forget(channel: string, remove = true): void {
    const tag = this.#listening.get(channel)?.done === true ? this.#tags.get(channel) : undefined;
    this.#tags.delete(channel);
    this.#listening.get(channel)?.reject(new Error('nobody waits on this channel any more'));
    this.#listening.delete(channel);
    if (remove) this.#waiters.delete(channel);
    if (tag !== undefined) this.#host.watched?.(tag, -1);
    this.#host.send(`UNLISTEN ${quoted(channel)}`).catch(() => undefined);
  }

  /** The listening connection is new: listen on every channel again. */
  relisten(): Promise<void> {
    return Promise.all(
      [...this.#waiters.keys()].map((channel) => {
        const listening = this.#listening.get(channel);
        return this.#host.send(`LISTEN ${quoted(channel)}`).then(() => {
          if (listening !== undefined) this.#listened(channel, listening);
        });
      }),
    ).then(() => undefined);
  }

  /** The session ended: every waiter fails with `reason`. */
  failAll(reason: Error): void {
    for (const channel of [...this.#waiters.keys()]) {
      const tag = this.#listening.get(channel)?.done === true ? this.#tags.get(channel) : undefined;
      this.#tags.delete(channel);
      this.#listening.get(channel)?.reject(reason);
      this.#listening.delete(channel);
      if (tag !== undefined) this.#host.watched?.(tag, -1);
      settleWaiters(this.#waiters, channel, { error: reason });
    }
  }
}

/** A channel's LISTEN as its waiters see it: resolved once the server listens, rejected when nobody waits. */
class Listening {
  readonly promise: Promise<void>;
  /** Resolved: the server listens. */
  done = false;
  #resolve!: () => void;
  reject!: (reason: Error) => void;

  constructor() {
    this.promise = new Promise<void>((resolve, reject) => {
      this.#resolve = resolve;
      this.reject = reject;
    });
    this.promise.catch(() => undefined);
  }

  resolve(): void {
    this.done = true;
    this.#resolve();
  }
}

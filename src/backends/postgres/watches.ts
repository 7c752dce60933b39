import { type Abortable, type Entry, untilAborted } from '../../../recipes/contract.js';
import type { DriverCore } from '../core.js';
import { SqlEntry } from '../sql/entry.js';
import { sameEntries } from '../waiters.js';
import { WatchBackstop } from './backstop.js';
import { type Channels, entryChannel, queueChannel } from './channels.js';
import type { Statements } from './statements.js';

/** What the waits need of their driver. */
export interface WatchesHost {
  readonly core: DriverCore;
  readonly channels: Channels;
  readonly sql: Statements;
  readonly schema: string;
  readonly namespace: string;
  /** The session's row id (an observer row names it). */
  readonly session: string;
  /** A request on the main connection, sent again while it fails only on the way. */
  request<R extends Record<string, unknown>>(text: string, values: readonly unknown[]): Promise<R[]>;
  list(queue: string): Promise<readonly Entry[]>;
}

/**
 * The session's waits: for an entry's delete (LISTEN on its channel) and for a queue's change (an
 * observer row, and LISTEN on the queue's channel), each checked once it listens and by the backstop.
 */
export class Watches {
  readonly #host: WatchesHost;
  /** Entries waited on: channel -> token, for the backstop's and a reconnect's check. */
  readonly #watchedTokens = new Map<string, { token: bigint; queue: string }>();
  /** Observed queues (waitChange): how many local waits each, and the listing the latest one compares with. */
  readonly #observed = new Map<string, number>();
  readonly #observedSeen = new Map<string, readonly Entry[]>();
  readonly #backstop: WatchBackstop;

  constructor(host: WatchesHost, backstopEveryMs: number) {
    this.#host = host;
    this.#backstop = new WatchBackstop(
      {
        core: host.core,
        channels: host.channels,
        watchedTokens: () => [...this.#watchedTokens].map(([channel, { token }]) => [channel, token] as const),
        observedSeen: () => [...this.#observedSeen],
        queueChannel: (queue) => queueChannel(host.schema, host.namespace, queue),
        live: (tokens) => this.#live(tokens),
        list: (queue) => host.list(queue),
      },
      backstopEveryMs,
    );
  }

  async waitGone(entry: Entry, signal: Abortable): Promise<void> {
    const { core, channels, schema, namespace } = this.#host;
    signal.throwIfAborted();
    const end = core.endError();
    if (end !== undefined) throw end;
    const token = SqlEntry.rowTokenOf(entry);
    const channel = entryChannel(schema, token);
    this.#watchedTokens.set(channel, { token, queue: entry.queue });
    const { done, listening } = channels.wait(channel, `${namespace}/${entry.queue}#${entry.key}`, signal);
    const forget = (): void => {
      if (!channels.has(channel)) this.#watchedTokens.delete(channel);
    };
    done.then(forget, forget);
    this.#backstop.ensure();
    // Listening first, then looking: a delete after the look is notified, one before it is seen.
    void untilAborted(listening, signal)
      .then(() => this.#live([token]))
      .then((live) => {
        if (!live.has(token)) channels.wake(channel);
      })
      .catch(() => undefined); // the session's end or the signal settles `done`
    return done;
  }

  /** Which of these entries exist and belong to a live session (an expired session's entries count as gone). */
  async #live(tokens: readonly bigint[]): Promise<Set<bigint>> {
    const rows = await this.#host.request<{ token: string }>(this.#host.sql.live, [tokens.map(String)]);
    return new Set(rows.map((row) => BigInt(row.token)));
  }

  async waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    const { core, channels, sql, schema, namespace, session } = this.#host;
    signal.throwIfAborted();
    const end = core.endError();
    if (end !== undefined) throw end;
    const channel = queueChannel(schema, namespace, queue);
    const { done, listening } = channels.wait(channel, `${namespace}/${queue}`, signal);
    this.#observe(queue, 1);
    this.#observedSeen.set(queue, seen);
    const forget = (): void => this.#observe(queue, -1);
    done.then(forget, forget);
    this.#backstop.ensure();
    void untilAborted(listening, signal)
      .then(() => this.#host.request(sql.observe, [namespace, queue, session]))
      .then(() => this.#host.list(queue))
      .then((now) => {
        if (!sameEntries(now, seen)) channels.wake(channel);
      })
      .catch(() => undefined);
    return done;
  }

  /** Counts the local waits on a queue's changes; the observer row goes when the last one does. */
  #observe(queue: string, delta: 1 | -1): void {
    const count = (this.#observed.get(queue) ?? 0) + delta;
    if (count > 0) {
      this.#observed.set(queue, count);
      return;
    }
    this.#observed.delete(queue);
    this.#observedSeen.delete(queue);
    const { core, sql, namespace, session } = this.#host;
    if (core.isOpen) this.#host.request(sql.unobserve, [namespace, queue, session]).catch(() => undefined);
  }

  /** The listening connection is back: listen again, then wake every waiter whose entry went meanwhile. */
  relistened(): void {
    if (!this.#host.core.isOpen) return;
    void this.#host.channels
      .relisten()
      .then(() => this.#backstop.check())
      .catch(() => undefined);
  }

  /** The session ended: the backstop stops and every wait fails with `reason`. */
  failAll(reason: Error): void {
    this.#backstop.stop();
    this.#host.channels.failAll(reason);
    this.#watchedTokens.clear();
    this.#observed.clear();
    this.#observedSeen.clear();
  }
}

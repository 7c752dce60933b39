import type { Cluster, Redis } from 'ioredis';

import type { Enqueued, EnqueuedAhead, Entry, GiveUp } from '../../../recipes/contract.js';
import type { Mover } from '../../../recipes/decide.js';
import { BackendError, SessionLostError } from '../../../recipes/errors.js';
import type { DriverCore, FailurePolicy } from '../core.js';
import { EnqueueSlots } from '../enqueue-slots.js';
import { replyCode } from './failures.js';
import { idOf, livenessKey, type LockKeys, type Stored } from './keys.js';
import type { LivenessKeys } from './liveness.js';
import type { OwnEntries } from './own-entries.js';
import type { RedisCounters } from './probe.js';

/** The enqueue scripts as commands of baton's client (see scripts.ts `ENQUEUE`, `ENQUEUE_AHEAD`). */
export interface EnqueueScripts {
  batonEnqueue(...args: EnqueueArgs): Promise<string[]>;
  batonEnqueueAhead(...args: [...EnqueueArgs, page: string]): Promise<string[]>;
}

type EnqueueArgs = [
  queue: string,
  counter: string,
  liveness: string,
  base: string,
  id: string,
  kind: string,
  data: string,
  at: string,
  timeoutMs: number,
  expected: '0' | '1',
];

/** What the enqueue needs of its driver. */
export interface EnqueuerHost {
  readonly id: string;
  readonly timeoutMs: number;
  readonly client: (Redis | Cluster) & EnqueueScripts;
  readonly core: DriverCore;
  readonly failures: FailurePolicy;
  readonly liveness: LivenessKeys;
  readonly own: OwnEntries;
  readonly counters: RedisCounters;
  keysOf(queue: string): LockKeys;
  /** The entries of a script's field-value pairs (foreign ones reported). */
  parse(queue: string, keys: LockKeys, flat: readonly string[]): Stored[];
  /** A request retried while it fails on the way, settled with the session's end. */
  request<T>(send: () => Promise<T>): Promise<T>;
}

/**
 * The enqueue: one script that sets the session's key in the lock, adds the entry (unless an attempt
 * whose reply was lost did) and reads the queue, answering with all of it, or (`enqueueAhead`) with
 * the entries just ahead and whether write and semaphore entries are queued; at most 16 of a
 * session's in flight (see `EnqueueSlots`), an entry put at another's place at once.
 */
export class Enqueuer {
  readonly #host: EnqueuerHost;
  readonly #slots: EnqueueSlots;

  constructor(host: EnqueuerHost) {
    this.#host = host;
    this.#slots = new EnqueueSlots(host.counters);
  }

  async enqueue(queue: string, kind: string, at: Entry | undefined, data: string, giveUp?: GiveUp): Promise<Enqueued> {
    const keys = this.#host.keysOf(queue);
    const place = at === undefined ? '' : `${at.order} ${at.fencingToken}`;
    const send = (): Promise<{ id: string; flat: string[] }> =>
      this.#put(queue, keys, (args) => this.#host.client.batonEnqueue(...args(kind, data, place)));
    const { id, flat } = await (at === undefined ? this.#slots.run(send, giveUp) : send());
    if (flat[0] === '1') this.#host.counters.adopted += 1;
    const stored = this.#host.parse(queue, keys, flat.slice(1));
    return { entry: ownEntry(stored, id, keys), queue: stored.map((found) => found.entry) };
  }

  /**
   * The answer: [found, more, position, writes, semaphores, field, value, ...] with our entry and the
   * entries just ahead (see scripts.ts `ENQUEUE_AHEAD`); the server still walks the queue's hash.
   */
  async enqueueAhead(queue: string, kind: string, page: number, data: string, giveUp?: GiveUp): Promise<EnqueuedAhead> {
    const keys = this.#host.keysOf(queue);
    const { id, flat } = await this.#slots.run(
      () =>
        this.#put(queue, keys, (args) => this.#host.client.batonEnqueueAhead(...args(kind, data, ''), String(page))),
      giveUp,
    );
    if (flat[0] === '1') this.#host.counters.adopted += 1;
    const [, more, position, writes, semaphores] = flat;
    const stored = this.#host.parse(queue, keys, flat.slice(5));
    const entry = ownEntry(stored, id, keys);
    const movers: Mover[] = [];
    if (writes === '1') movers.push('write');
    if (semaphores === '1') movers.push('semaphore');
    // Parsed in queue order: nearest first is the reverse.
    const ahead = stored.filter((found) => found.entry !== entry).map((found) => found.entry);
    ahead.reverse();
    return { entry, ahead, more: more === '1', position: Number(position), movers };
  }

  /**
   * Adds our entry with `script`, safe against a lost reply (the id is ours, so a retry finds it), and
   * renews the session's key in the lock if the session's acknowledgement outran it. An entry that may
   * have been written by a failed attempt is removed in the background.
   */
  async #put(
    queue: string,
    keys: LockKeys,
    script: (args: (kind: string, data: string, at: string) => EnqueueArgs) => Promise<string[]>,
  ): Promise<{ id: string; flat: string[] }> {
    const host = this.#host;
    const id = host.own.add(queue);
    const liveness = livenessKey(keys.base, host.id);
    // The session's key in the lock lives a full timeout from the first attempt's send at least.
    const sentAt = performance.now();
    let flat: string[];
    let setAt = sentAt;
    try {
      flat = await host.request(() =>
        this.#attempt(queue, (expected) =>
          script((kind, data, at) => [
            keys.queue,
            keys.counter,
            liveness,
            keys.base,
            id,
            kind,
            data,
            at,
            host.timeoutMs,
            expected,
          ]),
        ),
      );
      setAt = await this.#renewIfOutlived(liveness, sentAt);
    } catch (error) {
      host.own.removeLater(queue, id);
      throw error;
    }
    if (host.own.has(id)) host.liveness.entered(queue, liveness, id, setAt);
    return { id, flat };
  }

  /**
   * One attempt of an enqueue script, expecting the session's key in the lock if the session has
   * entries there now. Refused for a key gone while expected: lost if the session still counts on
   * that key (its entries there are dead), else sent again without expecting it (the last entry
   * there was released meanwhile, and the key left to expire).
   */
  async #attempt(queue: string, send: (expected: '0' | '1') => Promise<string[]>): Promise<string[]> {
    const host = this.#host;
    for (;;) {
      const expected = host.liveness.has(queue);
      try {
        return await send(expected ? '1' : '0');
      } catch (error) {
        if (replyCode(error) !== 'BATONLIVENESS') throw error;
        if (expected && host.liveness.has(queue)) {
          const lost = host.failures.lostError(error);
          host.core.lose(lost);
          throw lost;
        }
      }
    }
  }

  /**
   * The session's acknowledgement never goes back: if renewals of its other keys acknowledged it past
   * the time this lock's key was set (an enqueue answered late), the session's deadline could outlive
   * the key. Then the key is renewed once more (and again, until the renewal is answered soon enough),
   * and counts from that renewal. A key found gone means our entries there are dead: the session is lost.
   */
  async #renewIfOutlived(liveness: string, sentAt: number): Promise<number> {
    const host = this.#host;
    const slack = (host.core.events?.deadlineMarginMs ?? host.timeoutMs / 8) / 4;
    let setAt = sentAt;
    while (host.liveness.given - setAt > slack) {
      const renewedAt = performance.now();
      if ((await host.request(() => host.client.pexpire(liveness, host.timeoutMs))) === 0) {
        const lost = new SessionLostError(`Redis session key ${liveness} expired or was deleted`);
        host.core.lose(lost);
        throw lost;
      }
      setAt = renewedAt;
    }
    return setAt;
  }
}

function ownEntry(stored: readonly Stored[], id: string, keys: LockKeys): Entry {
  const own = stored.find((found) => idOf(found.entry.key) === id);
  if (own === undefined) throw new BackendError(`the enqueue of ${id} did not show the entry in ${keys.queue}`);
  return own.entry;
}

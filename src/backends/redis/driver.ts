import type { Cluster, Redis } from 'ioredis';

import { BoundedMap } from '../../../recipes/bounded-map.js';
import type {
  Abortable,
  Ahead,
  AheadAsked,
  Enqueued,
  EnqueuedAhead,
  Entry,
  GiveUp,
  GuardedOp,
} from '../../../recipes/contract.js';
import { ClosedError } from '../../../recipes/errors.js';
import type { Driver, DriverEvents, EntryInfo } from '../../driver-port.js';
import { backstopEveryMs } from '../../timing.js';
import type { FailurePolicy } from '../core.js';
import { DriverCore } from '../core.js';
import { fromPromise } from '../requests.js';
import { Enqueuer, type EnqueueScripts } from './enqueue.js';
import { redisFailures } from './failures.js';
import { redisGuardedRead, redisGuardedWrite } from './guarded.js';
import { KeepAlive, REDIS_FLOOR_MS } from './keepalive.js';
import { idOf, livenessKey, type LockKeys, lockKeys, parseQueue, type Stored } from './keys.js';
import { readBefore } from './list-before.js';
import { LivenessKeys } from './liveness.js';
import { type OpenedSession, openSession, type RedisDriverOptions } from './open.js';
import { OwnEntries } from './own-entries.js';
import { type RedisCounters, redisCounters, type RedisProbe, type RedisView } from './probe.js';
import { redisRevoke } from './revoke.js';
import { SubscriberLink } from './subscriber.js';
import { Watches } from './watches.js';

export type { RedisDriverOptions } from './open.js';

/** baton's scripts as commands of its own client (see scripts.ts). */
interface Scripts extends EnqueueScripts {
  batonList(queue: string, base: string): Promise<string[]>;
  batonGone(queue: string, base: string, ...ids: string[]): Promise<number[]>;
  batonConfirm(queue: string, liveness: string, id: string): Promise<[number, number]>;
  batonRead(queue: string, base: string, id: string): Promise<string | null>;
}

/**
 * The Redis backend on ioredis, for a single server or a Redis Cluster: a session is a key with a
 * millisecond expiry, and a key like it in each lock it has entries in, which the keep-alive renews; a
 * lock's queue is a hash whose entries are ordered by the lock's counter, which is also the fencing
 * token. Every request is one script (or one command) on one lock's slot, safe to send twice: an
 * enqueue carries the entry's id, chosen here, so that a retry finds the entry instead of adding
 * another.
 */
export class RedisDriver implements Driver {
  /** None: no other client's entries live in baton's hashes. */
  readonly dialects: readonly string[] = [];
  readonly id: string;
  readonly timeoutMs: number;
  readonly openedAt: number;
  readonly #client: (Redis | Cluster) & Scripts;
  readonly #subscriber: SubscriberLink;
  readonly #sessionKey: string;
  readonly #liveness: LivenessKeys;
  readonly #namespace: string;
  readonly #failures: FailurePolicy;
  readonly #core: DriverCore;
  readonly #counters: RedisCounters;
  readonly #keepAlive: KeepAlive;
  readonly #watches: Watches;
  /** Each lock's key names, for the 256 locks used last. */
  readonly #keys = new BoundedMap<string, LockKeys>(256);
  readonly #own: OwnEntries;
  readonly #enqueuer: Enqueuer;

  static async open(options: RedisDriverOptions, probe?: RedisProbe): Promise<RedisDriver> {
    return new RedisDriver(await openSession(options), options, probe);
  }

  private constructor(opened: OpenedSession, options: RedisDriverOptions, probe: RedisProbe | undefined) {
    this.#client = opened.client as (Redis | Cluster) & Scripts;
    this.id = opened.id;
    this.#sessionKey = opened.key;
    this.openedAt = opened.openedAt;
    this.#liveness = new LivenessKeys(this.#sessionKey, this.openedAt, options.sessionTimeoutMs);
    this.#subscriber = new SubscriberLink(
      opened.subscriber,
      {
        ready: () => this.#keepAlive.subscriberReady(),
        message: (channel) => this.#watches.onMessage(channel),
        resubscribed: () => this.#watches.reconnected(),
      },
      opened.nextSubscriber,
    );
    this.timeoutMs = options.sessionTimeoutMs;
    this.#namespace = options.namespace;
    this.#counters = probe?.counters ?? redisCounters();
    this.#failures = redisFailures(this.id, this.#namespace);
    this.#core = new DriverCore(this.#failures, {
      onEnd: (reason) => this.#onEnd(reason),
      onLost: () => this.#own.letGo(() => this.#disconnect()),
    });
    this.#own = new OwnEntries({
      id: this.id,
      timeoutMs: this.timeoutMs,
      client: this.#client,
      core: this.#core,
      liveness: this.#liveness,
      sessionKey: this.#sessionKey,
      keysOf: (queue) => this.#keysOf(queue),
    });
    this.#enqueuer = new Enqueuer({
      id: this.id,
      timeoutMs: this.timeoutMs,
      client: this.#client,
      core: this.#core,
      failures: this.#failures,
      liveness: this.#liveness,
      own: this.#own,
      counters: this.#counters,
      keysOf: (queue) => this.#keysOf(queue),
      parse: (queue, keys, flat) => this.#parse(queue, keys, flat),
      request: (send) => this.#request(send),
    });
    this.#keepAlive = new KeepAlive(this.#client, this.#subscriber, this.#liveness, this.timeoutMs, this.#core, {
      // The socket stands but nothing comes back: dial again (requests in flight are sent again).
      client: () => {
        if (this.#client.status === 'ready') this.#client.disconnect(true);
        this.#subscriber.redial();
      },
      subscriber: () => this.#subscriber.redial(),
    });
    this.#watches = new Watches(
      this.#subscriber,
      {
        isOpen: () => this.#core.isOpen,
        endError: () => this.#core.endError(),
        exists: async (entry) =>
          (await this.#request(() => this.#client.hexists(this.#keysOf(entry.queue).queue, idOf(entry.key)))) === 1,
        list: (queue) => this.list(queue),
        gone: (entries) => this.#gone(entries),
        changesChannel: (queue) => this.#keysOf(queue).changes,
        mapFailure: (error) => this.#core.mapFailure(error),
      },
      this.#counters,
      probe,
      backstopEveryMs(this.timeoutMs, REDIS_FLOOR_MS),
    );
    this.#client.on('close', () => {
      this.#keepAlive.suspend();
      this.#own.connectionClosed();
    });
    this.#client.on('ready', () => {
      this.#keepAlive.clientReady();
      this.#own.connectionBack();
    });
    this.#client.on('-node', () => this.#own.nodeGone());
    this.#keepAlive.start();
    probe?.expose(this.#view());
  }

  attach(events: DriverEvents): void {
    this.#core.attach(events);
    events.ack(this.openedAt);
  }

  #keysOf(queue: string): LockKeys {
    return this.#keys.getOrSet(queue, () => lockKeys(this.#namespace, queue));
  }

  /** A request retried while it fails on the way, settled with the session's end. */
  #request<T>(request: () => Promise<T>): Promise<T> {
    return this.#core.retry(fromPromise(request));
  }

  enqueue(
    queue: string,
    kind: string,
    at?: Entry,
    data?: string,
    _dialect?: string,
    giveUp?: GiveUp,
  ): Promise<Enqueued> {
    return this.#enqueuer.enqueue(queue, kind, at, data ?? '', giveUp);
  }

  enqueueAhead(
    queue: string,
    kind: string,
    asked: AheadAsked,
    data?: string,
    _dialect?: string,
    giveUp?: GiveUp,
  ): Promise<EnqueuedAhead> {
    return this.#enqueuer.enqueueAhead(queue, kind, asked.page, data ?? '', giveUp);
  }

  #parse(queue: string, keys: LockKeys, flat: readonly string[]): Stored[] {
    const { stored, foreign } = parseQueue(queue, keys, flat);
    this.#counters.queueEntriesRead += stored.length;
    if (foreign.length > 0) this.#core.foreign.report(queue, foreign);
    return stored;
  }

  async list(queue: string): Promise<readonly Entry[]> {
    const keys = this.#keysOf(queue);
    const flat = await this.#request(() => this.#client.batonList(keys.queue, keys.base));
    return this.#parse(queue, keys, flat).map((found) => found.entry);
  }

  /** The short read at a wake (see list-before.ts): our entry's presence and the entries just ahead. */
  async listBefore(queue: string, self: Entry, limit?: number): Promise<Ahead> {
    const keys = this.#keysOf(queue);
    const { present, more, flat } = await this.#request(() => readBefore(this.#client, keys, self, limit));
    if (present) this.#counters.queueEntriesRead += 1;
    const entries = this.#parse(queue, keys, flat).map((found) => found.entry);
    return { present, entries: entries.reverse(), more };
  }

  /** For each entry, whether it is gone (the backstop's look: see the gone script), one script per queue (a slot each). */
  async #gone(entries: readonly Entry[]): Promise<boolean[]> {
    const byBase = new Map<string, number[]>();
    entries.forEach((entry, index) => {
      const base = entry.key.slice(0, entry.key.lastIndexOf(':e:'));
      const indexes = byBase.get(base);
      if (indexes === undefined) byBase.set(base, [index]);
      else indexes.push(index);
    });
    const gone = new Array<boolean>(entries.length).fill(false);
    await Promise.all(
      [...byBase].map(async ([base, indexes]) => {
        const flags = await this.#request(() =>
          this.#client.batonGone(`${base}:q`, base, ...indexes.map((index) => idOf(entries[index]!.key))),
        );
        flags.forEach((flag, at) => (gone[indexes[at]!] = flag === 1));
      }),
    );
    return gone;
  }

  waitGone(entry: Entry, signal: Abortable): Promise<void> {
    return this.#watches.waitGone(entry, signal);
  }

  waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    return this.#watches.waitChange(queue, seen, signal);
  }

  async withdraw(entry: Entry): Promise<void> {
    const id = idOf(entry.key);
    if (!this.#own.has(id) || !this.#core.isOpen) return; // gone already, or with the session
    await this.#own.release(entry.queue, id);
  }

  async read(entry: Entry): Promise<string | null> {
    const keys = this.#keysOf(entry.queue);
    const value = await this.#request(() => this.#client.batonRead(keys.queue, keys.base, idOf(entry.key)));
    if (value === null) return null;
    return value.split(' ').slice(4).join(' ');
  }

  async describe(queue: string): Promise<EntryInfo[]> {
    const keys = this.#keysOf(queue);
    const all = await this.#request(() => this.#client.hgetall(keys.queue));
    const stored = this.#parse(queue, keys, Object.entries(all).flat());
    const owners = [...new Set(stored.map((found) => found.owner))];
    const ttls = await Promise.all(
      owners.map((owner) => this.#request(() => this.#client.pttl(livenessKey(keys.base, owner)))),
    );
    const ttlOf = new Map(owners.map((owner, index) => [owner, ttls[index]!]));
    return stored.map(({ entry, owner, data, createdAt }) => {
      const ttl = ttlOf.get(owner) ?? -2;
      return { entry, owner, client: 'baton', data, createdAt, ...(ttl >= 0 ? { expiresInMs: ttl } : {}) };
    });
  }

  async confirm(entry: Entry): Promise<boolean> {
    const id = idOf(entry.key);
    const keys = this.#keysOf(entry.queue);
    const [exists, alive] = await this.#request(() =>
      this.#client.batonConfirm(keys.queue, livenessKey(keys.base, this.id), id),
    );
    // A key gone where the session no longer counts on it (its last entry there released meanwhile) is no loss.
    if (alive === 0 && this.#liveness.has(entry.queue)) {
      const reason = this.#failures.lostError();
      this.#core.lose(reason);
      throw reason;
    }
    return exists === 1 && alive === 1 && id.startsWith(`${this.id}-`);
  }

  abandon(reason: Error): void {
    this.#core.abandon(reason, () => this.#disconnect());
  }

  close(): Promise<void> {
    return this.#core.close(this.timeoutMs, {
      onServer: (until) => this.#own.removeAll(until),
      disconnect: () => this.#disconnect(),
    });
  }

  #onEnd(reason: Error): void {
    this.#keepAlive.stop();
    this.#watches.failAll(reason);
  }

  #disconnect(): void {
    this.#client.disconnect();
    this.#subscriber.close(this.#core.endError() ?? new ClosedError());
  }

  /** What `baton-locks/testing` may see and do (see `RedisView`). */
  #view(): RedisView {
    const driver = this;
    return {
      sessionKey: this.#sessionKey,
      get waitedChannels() {
        return driver.#watches.size;
      },
      stopWatchdog: () => this.#keepAlive.stop(),
    };
  }

  guardedWrite(entry: Entry, op: GuardedOp): Promise<boolean> {
    return this.#request(() => redisGuardedWrite(this.#client, this.#namespace, this.id, entry, op));
  }

  guardedRead(queue: string, name: string): Promise<string | null> {
    return this.#request(() => redisGuardedRead(this.#client, this.#namespace, queue, name));
  }

  /** An operator's force release of any session's entry (see revoke.ts). */
  revoke(entry: Entry): Promise<boolean> {
    return this.#request(() => redisRevoke(this.#client, this.#namespace, entry));
  }
}

import { noop, type IBackoff } from 'cockatiel';
import { Etcd3, EtcdAuthenticationFailedError, GRPCDeadlineExceededError, EtcdLeaseInvalidError, EtcdPermissionDeniedError, isRecoverableError, type IKeyValue, type IOptions, type IRangeResponse, type ITxnRequest, type Watcher } from 'etcd3';
import type { Abortable, Entry, Enqueued } from '../../../recipes/contract.js';
import { AccessDeniedError, BackendError, BatonError, ClosedError, LockDowngradeError, SessionLostError } from '../../../recipes/errors.js';
import { ForeignReporter, type Driver, type DriverEvents, type EntryInfo } from '../driver.js';
import { untilAborted } from '../../../recipes/deadline.js';
import { addWaiter, backoff, InFlight, sameEntries, type Recover, type Waiter } from '../requests.js';
import { describeDialFailure, dialErrorCode } from '../dial.js';
import { closeServicesPromptly } from './close.js';
import { KeepAlive } from './keepalive.js';
import { Members } from './members.js';
import { clientOf, entriesFromRange, EtcdEntry, entryKey, foreignKeys, leaseHex, prefixEnd, queuePrefix, slotOf, type StoredKey } from './keys.js';
import { Slots } from './slots.js';

export interface EtcdDriverOptions {
  /** `http://host:port` each. */
  readonly hosts: readonly string[];
  /** Key prefix every queue lives under, without a trailing `/`. */
  readonly namespace: string;
  readonly ttlSeconds: number;
  readonly connectTimeoutMs: number;
  /** Passed through to etcd3: `auth`, `credentials` (TLS), `grpcOptions`. */
  readonly client?: Pick<IOptions, 'auth' | 'credentials' | 'grpcOptions'>;
  /** Gives up connecting when it aborts (the client is closed). */
  readonly signal?: AbortSignal;
}

/**
 * Counters for tests and benchmarks, like the ZooKeeper backend's; `confirmRequests`: requests sent to
 * confirm entries (holds are confirmed on a timer).
 */
export const etcdCounters = { notifications: 0, adopted: 0, orphansRemoved: 0, confirmRequests: 0 };
/** Keys this process watches right now, with how many sessions watch each (for clean-state checks). */
export const etcdWatches = new Map<string, number>();

function countWatch(key: string, delta: 1 | -1): void {
  const count = (etcdWatches.get(key) ?? 0) + delta;
  if (count > 0) etcdWatches.set(key, count);
  else etcdWatches.delete(key);
}

/** A wait for a change of a queue, as the backstop sees it. */
interface PrefixWait {
  readonly queue: string;
  readonly prefix: string;
  readonly seen: readonly Entry[];
  /** Ends the wait: the caller lists the queue again. */
  readonly wake: () => void;
}

interface Watched {
  /** The etcd key watched (the map holding this is keyed by incarnation). */
  readonly key: string;
  /** Its create revision: the incarnation waited for. */
  readonly createdAt: bigint;
  readonly waiters: Set<Waiter>;
  watcher?: Watcher | undefined;
}

/**
 * How long etcd3's watch manager waits before it opens a broken watch stream again: 50 ms, doubling
 * up to `capMs` (a quarter of the TTL, at most a second). etcd3's default grows to 30 s: waiters
 * would sleep that long after a member restart, and the pending timer would keep a closed client's
 * process alive as long.
 */
class WatchBackoff implements IBackoff<unknown> {
  constructor(
    readonly duration: number,
    private readonly capMs: number,
  ) {}

  next(): WatchBackoff {
    return new WatchBackoff(Math.min(Math.max(this.duration * 2, 50), this.capMs), this.capMs);
  }
}

/** The etcd backend on etcd3: one lease per session, shared by every recipe on it. */
export class EtcdDriver implements Driver {
  /** None: etcd's Go recipes wait for every key created before theirs, baton's too. */
  readonly dialects: readonly string[] = [];
  readonly id: string;
  readonly timeoutMs: number;
  readonly openedAt: number;
  readonly #client: Etcd3;
  readonly #lease: string;
  readonly #namespace: string;
  readonly #slots = new Slots();
  /**
   * One watch per incarnation of a key (key and create revision), shared by its local waiters. Keys
   * are reused, so a waiter for an earlier incarnation must not join a watch that started after it.
   */
  readonly #watched = new Map<string, Watched>();
  /** Every etcd3 watcher of ours not cancelled yet, created or still being created. */
  readonly #watchers = new Set<Watcher>();
  /** Every queue-change wait in progress, by the function that ends it when the session ends. */
  readonly #prefixWaits = new Map<(reason: Error) => void, PrefixWait>();
  /** The backstop for silent watches (`#checkWatched`), running while anything is watched. */
  #watchCheck: NodeJS.Timeout | undefined;
  /** @internal For tests: watch events are ignored, as if every watch stream had gone silent. */
  muteWatchEvents = false;
  /** @internal For tests: runs between a change wait's listing and its watch (to compact in between). */
  beforePrefixWatch: (() => Promise<void>) | undefined;
  /** Our keys that exist on the server, with the create revision of their incarnation. */
  readonly #live = new Map<string, bigint>();
  /** Keys a delete of unknown fate was sent for: their slots are retired for good. */
  readonly #doubtful = new Set<string>();
  /** The delete in flight for a key: a second withdraw joins it rather than sending another. */
  readonly #deleting = new Map<string, Promise<void>>();
  /** Keys whose enqueue is in flight: a listing may show them before the enqueue has returned. */
  readonly #enqueuing = new Set<string>();
  /** Orphans of ours whose guarded delete is in flight. */
  readonly #removing = new Set<string>();
  /**
   * Queues where an enqueue of ours had an attempt of unknown fate, until when to keep looking at them:
   * such an attempt can still be applied after the entry it was for has been released, and it would
   * leave an entry with our lease that nobody waits on, ahead of everyone who queues after it.
   */
  readonly #unsettled = new Map<string, number>();
  #sweeper: NodeJS.Timeout | undefined;
  readonly #requests = new InFlight();
  readonly #ranges = new Map<string, { key: Buffer; range_end: Buffer; keys_only: true }>();
  readonly #keepAlive: KeepAlive;
  readonly #members: Members;
  #status: 'open' | 'lost' | 'closed' = 'open';
  /** The keepalive stream is down: the lease may live, but we cannot renew it now. */
  #suspended = false;
  #events: DriverEvents | undefined;
  readonly #foreign = new ForeignReporter();

  static async open(options: EtcdDriverOptions): Promise<EtcdDriver> {
    const client = new Etcd3({
      hosts: [...options.hosts],
      dialTimeout: options.connectTimeoutMs,
      // No circuit breaker and no retries inside etcd3: its breaker fails every call to a member for
      // 5 s after three errors, longer than a short lease. The driver retries until the session's
      // deadline instead, each attempt on a randomly chosen member.
      faultHandling: { host: () => noop, global: noop, watchBackoff: new WatchBackoff(0, Math.min(1_000, options.ttlSeconds * 250)) },
      ...options.client,
      // etcd3 fetches the auth token from the members in a fixed order, with no deadline of its own:
      // a member that hangs would hold every call (connect and close included). Each try gets a third
      // of the TTL, then the next member is asked.
      ...(options.client?.auth === undefined
        ? {}
        : { auth: { callOptions: () => ({ deadline: Date.now() + attemptMs(options.ttlSeconds * 1000) }), ...options.client.auth } }),
      // gRPC waits 1 s (growing to 2 min) before dialling a member again, longer than a short lease
      // leaves; a coordination client wants to be back within a fraction of its TTL. Keepalive pings
      // find a connection whose member stopped answering (a watch stream on it would stay silent);
      // etcd refuses pings more often than every 5 s by default.
      grpcOptions: {
        'grpc.initial_reconnect_backoff_ms': 100,
        'grpc.max_reconnect_backoff_ms': 1_000,
        'grpc.keepalive_time_ms': 10_000,
        'grpc.keepalive_timeout_ms': 5_000,
        ...options.client?.grpcOptions,
      },
    });
    const members = new Members(client);
    const connecting = closeServicesPromptly(client);
    const deadline = Date.now() + options.connectTimeoutMs;
    let dialError: unknown; // the last attempt may end on its deadline, saying less than one before it
    for (let attempt = 0; ; attempt += 1) {
      const openedAt = performance.now();
      try {
        options.signal?.throwIfAborted(); // before each attempt: a grant sent after the abort would be left behind
        // Each attempt gets a part of the budget, so that a member that hangs does not take all of it;
        // the part doubles with each attempt, so that a slow link (whose first attempt also dials the
        // connection, and a timed-out attempt closes it) still gets through.
        const attemptDeadline = Math.min(deadline, Date.now() + attemptMs(options.ttlSeconds * 1000) * 2 ** Math.min(attempt, 6));
        const granting = members.attempt(() => client.leaseClient.leaseGrant({ TTL: options.ttlSeconds, ID: 0 }, { deadline: attemptDeadline }), options.ttlSeconds * 1000);
        const grant = await (options.signal === undefined ? granting : untilAborted(granting, options.signal));
        connecting.restore();
        return new EtcdDriver(client, members, options, grant.ID, Number(grant.TTL) * 1000, openedAt);
      } catch (error) {
        // First: the reason may be any value, which etcd3's error checks below cannot take.
        if (options.signal?.aborted === true) {
          client.close();
          throw options.signal.reason;
        }
        if (dialErrorCode(error) !== undefined) dialError = error;
        // Each attempt goes to a member chosen at random: one that is down must not fail the connect.
        if (isRecoverableError(error as Error) && !outOfSpace(error) && Date.now() < deadline) {
          await backoff(attempt);
          continue;
        }
        client.close();
        if (error instanceof EtcdAuthenticationFailedError) throw new AccessDeniedError('etcd refused the user name or password (authentication failed)');
        if (error instanceof EtcdPermissionDeniedError) throw new AccessDeniedError('etcd refused to grant a lease to this user (permission denied)');
        if (outOfSpace(error)) throw new BackendError(OUT_OF_SPACE, { cause: error });
        const why = dialError ?? (error instanceof GRPCDeadlineExceededError ? undefined : error);
        throw new BackendError(`could not open an etcd session at ${options.hosts.join(',')} within ${options.connectTimeoutMs} ms: ${describeDialFailure(why, options.connectTimeoutMs)}`, { cause: why ?? error });
      }
    }
  }

  private constructor(client: Etcd3, members: Members, options: EtcdDriverOptions, lease: string, timeoutMs: number, openedAt: number) {
    this.#client = client;
    this.#lease = lease;
    this.#namespace = options.namespace;
    this.id = leaseHex(lease);
    this.timeoutMs = timeoutMs;
    this.openedAt = openedAt;
    this.#members = members;
    this.#keepAlive = new KeepAlive(members.leaseClient(client), members, lease, Math.max(Math.floor(timeoutMs / 4), 50), {
      ack: (sentAt) => {
        if (this.#suspended) {
          this.#suspended = false;
          this.#events?.status('connected');
        }
        this.#events?.ack(sentAt);
      },
      down: () => {
        if (this.#suspended || this.#status !== 'open') return;
        this.#suspended = true;
        this.#events?.status('suspended');
      },
      gone: () => this.#lose(new SessionLostError(`etcd lease ${this.id} expired or was revoked`)),
    });
  }

  /** @internal The member the lease keepalive stream is dialled to (tests). */
  get keepAliveMember(): string | undefined {
    return this.#keepAlive.member;
  }

  /**
   * The keys-only read of a queue's range, made once per queue (the 64 most recent): every enqueue and
   * listing sends it, and its two buffers cost more than the rest of the request to build.
   */
  #queueRange(prefix: string): { key: Buffer; range_end: Buffer; keys_only: true } {
    let range = this.#ranges.get(prefix);
    if (range === undefined) {
      range = { key: Buffer.from(prefix), range_end: prefixEnd(prefix), keys_only: true };
      if (this.#ranges.size >= RANGES_KEPT) this.#ranges.delete(this.#ranges.keys().next().value!);
    } else {
      this.#ranges.delete(prefix); // most recent last
    }
    this.#ranges.set(prefix, range);
    return range;
  }

  /** @internal How many keepalive streams were opened (tests). */
  get keepAliveOpens(): number {
    return this.#keepAlive.opens;
  }

  /** @internal Whether members that stopped answering are tried last (false if etcd3's internals changed). */
  get prefersLiveMembers(): boolean {
    return this.#members.installed;
  }

  attach(events: DriverEvents): void {
    this.#events = events;
    this.#foreign.attach(events);
  }

  enqueue(queue: string, kind: string, at?: Entry, data?: string, _dialect?: string): Promise<Enqueued> {
    // Without an async frame of its own on the common path (no `at`): an acquire's first request.
    if (at === undefined) return this.#put(queue, kind, undefined, data);
    return this.#put(queue, kind, at, data).then(async (enqueued) => {
      await this.#refuseOvertakenDowngrade(queue, enqueued, at);
      return enqueued;
    });
  }

  /** Puts an entry of ours into the queue, safe against a lost reply (see `enqueue`). */
  async #put(queue: string, kind: string, at: Entry | undefined, data: string | undefined): Promise<Enqueued> {
    const prefix = queuePrefix(this.#namespace, queue);
    const slot = this.#slots.take(queue);
    const keyText = entryKey(prefix, this.id, slot, kind, at?.order);
    const key = Buffer.from(keyText);
    const range = this.#queueRange(prefix);
    let attempts = 0;
    this.#enqueuing.add(keyText);
    try {
      // One request: put our key with the lease if it is absent, and read the queue as it then stands.
      // A retry after a lost reply finds the key it wrote (the failure branch) instead of adding another.
      const response = await this.#retry(() => {
        attempts += 1;
        return this.#client.kv.txn({
          compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }],
          success: [{ request_put: { key, value: data === undefined ? EMPTY : Buffer.from(data), lease: this.#lease } }, { request_range: range }],
          failure: [{ request_range: { key } }, { request_range: range }],
        }, this.#attempt());
      });
      if (!response.succeeded) this.#adopt(key, response.responses[0]?.response_range);
      const entries = this.#seen(queue, prefix, response.responses[1]?.response_range.kvs ?? [], response.header.revision);
      const entry = entries.find((e) => e.key === keyText);
      if (entry === undefined) throw new BackendError(`wrote ${keyText} but the queue read does not show it`);
      this.#live.set(entry.key, this.#created(entry));
      if (attempts > 1) {
        // A copy of an earlier attempt may still be applied after this entry is released: the key is
        // treated like one with a delete of unknown fate, so its slot is never used again (a later
        // enqueue would otherwise adopt that copy while an orphan removal of it is on its way).
        this.#doubtful.add(entry.key);
        this.#unsettle(queue);
      }
      return { entry, queue: entries };
    } catch (error) {
      // The key may exist or appear later: its slot is retired (never adopted by a later enqueue), and
      // the queue is looked at until any late attempt must have been applied. Not after a single
      // attempt refused for lack of space: etcd refuses that before applying anything.
      if (attempts > 1 || (attempts === 1 && !outOfSpace(error instanceof BackendError ? error.cause : error))) this.#unsettle(queue);
      else this.#slots.free(queue, slot);
      throw error;
    } finally {
      this.#enqueuing.delete(keyText);
    }
  }

  /**
   * A downgrade's read key is created after the writer's, so a Go waiter (which waits only for the
   * keys created before its own) that queued between the two would not wait for the read: it would be
   * granted as soon as the write key goes. Such a read is withdrawn and the downgrade refused; the
   * writer keeps its lock. A Go key created after the read waits for it, so one check suffices.
   */
  async #refuseOvertakenDowngrade(queue: string, { entry: read, queue: entries }: Enqueued, at: Entry): Promise<void> {
    const prefix = queuePrefix(this.#namespace, queue);
    const createdAt = EtcdEntry.createdAt(read);
    const peer = entries.find((e) => e.order > at.order && e.order < createdAt && clientOf(prefix, e.key) === 'etcd-go');
    if (peer === undefined) return;
    await this.withdraw(read);
    const why = `a client that does not see baton's read entries (etcd's Go recipes, key ${peer.key}) queued behind the write lock`;
    throw new LockDowngradeError(`read/write lock "${queue}"`, why);
  }

  async list(queue: string): Promise<readonly Entry[]> {
    const prefix = queuePrefix(this.#namespace, queue);
    const response = await this.#listing(prefix);
    return this.#seen(queue, prefix, response.kvs, response.header.revision);
  }

  /** The keys of a queue's range, retried like every read. */
  #listing(prefix: string): Promise<IRangeResponse> {
    const range = this.#queueRange(prefix);
    return this.#retry(() => this.#client.kv.range(range, this.#attempt()));
  }

  #seen(queue: string, prefix: string, kvs: readonly StoredKey[], revision: string): Entry[] {
    this.#removeOrphans(prefix, kvs);
    const entries = entriesFromRange(queue, prefix, kvs, revision);
    if (entries.length < kvs.length) this.#foreign.report(queue, foreignKeys(prefix, kvs));
    return entries;
  }

  waitGone(entry: Entry, signal: Abortable): Promise<void> {
    signal.throwIfAborted();
    const id = this.#incarnation(entry);
    const watched = this.#watched.get(id) ?? { key: entry.key, createdAt: this.#created(entry), waiters: new Set<Waiter>() };
    const first = !this.#watched.has(id);
    this.#watched.set(id, watched);
    const waiting = addWaiter(watched.waiters, signal, () => {
      if (watched.waiters.size === 0) this.#unwatch(id, watched);
    });
    // From the revision after the read that showed the entry: a delete in between is still seen, and
    // a watch that starts at the head revision is served at once (an older start revision makes etcd
    // catch the watcher up in a background loop that runs only every 100 ms).
    if (first) this.#arm(entry, watched, (EtcdEntry.seenAt(entry) ?? entry.order) + 1n);
    this.#ensureWatchCheck();
    return waiting;
  }

  async waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    signal.throwIfAborted();
    const prefix = queuePrefix(this.#namespace, queue);
    const response = await untilAborted(this.#listing(prefix), signal);
    if (!sameEntries(this.#seen(queue, prefix, response.kvs, response.header.revision), seen)) return;
    if (this.beforePrefixWatch !== undefined) await this.beforePrefixWatch();
    // From the revision after that listing: nothing that changes the queue from then on is missed.
    await this.#watchPrefix(queue, prefix, seen, BigInt(response.header.revision) + 1n, signal);
  }

  /**
   * Resolves at the first put or delete under `prefix` from revision `from` on, or when the watch
   * stream breaks (the caller lists again: etcd3 watchers can go quiet after a reconnect).
   */
  #watchPrefix(queue: string, prefix: string, seen: readonly Entry[], from: bigint, signal: Abortable): Promise<void> {
    signal.throwIfAborted();
    if (this.#status !== 'open') return Promise.reject(this.#status === 'lost' ? new SessionLostError(`etcd lease ${this.id} is gone`) : new ClosedError());
    return new Promise<void>((resolve, reject) => {
      const watcher = this.#client.watch().prefix(prefix).startRevision(from.toString()).watcher();
      this.#watchers.add(watcher);
      countWatch(prefix, 1);
      const finish = (settle: () => void): void => {
        if (!this.#prefixWaits.delete(end)) return;
        signal.removeEventListener('abort', onAbort);
        countWatch(prefix, -1);
        this.#drop(watcher);
        settle();
      };
      const end = (reason: Error): void => finish(() => reject(reason));
      const onAbort = (): void => finish(() => reject(signal.reason));
      this.#prefixWaits.set(end, { queue, prefix, seen, wake: () => finish(resolve) });
      signal.addEventListener('abort', onAbort, { once: true });
      this.#ensureWatchCheck();
      const changed = (): void => {
        if (this.muteWatchEvents) return;
        etcdCounters.notifications += 1;
        finish(resolve);
      };
      let created = false;
      watcher.on('connected', () => (created = true));
      watcher.on('put', changed);
      watcher.on('delete', changed);
      watcher.on('disconnected', () => finish(resolve));
      watcher.on('error', (error: unknown) => {
        if (created) {
          // etcd ended the watch itself (its start revision compacted away), and etcd3 has let go of it
          // already: forgotten, not cancelled. The caller looks again, as after any wake.
          this.#watchers.delete(watcher);
          return finish(resolve);
        }
        finish(() => reject(this.#map(error)));
      });
    });
  }

  withdraw(entry: Entry): Promise<void> {
    // Only the live incarnation is deleted: a handle's late second release finds it gone already.
    if (this.#live.get(entry.key) !== this.#created(entry)) return Promise.resolve();
    let deleting = this.#deleting.get(entry.key);
    if (deleting === undefined) {
      deleting = this.#delete(entry);
      this.#deleting.set(entry.key, deleting);
      // Beside the caller's promise, not in front of it (a `.finally` would delay every release).
      const forget = (): void => {
        if (this.#deleting.get(entry.key) === deleting) this.#deleting.delete(entry.key);
      };
      deleting.then(forget, forget);
    }
    return deleting;
  }

  async #delete(entry: Entry): Promise<void> {
    const key = Buffer.from(entry.key);
    // A plain delete first: the key is ours while its slot is taken, and an answered request was
    // applied once and is not in flight anywhere else. Only an attempt whose fate is unknown can be
    // applied later, after the slot was reused; so after one the slot is retired for good, and the
    // retries compare the create revision so that they too can only delete this incarnation.
    for (let attempt = 0; this.#status === 'open'; attempt += 1) {
      // The doubt outlives this call: a release retried after a failure must not free the slot either.
      const doubtful = this.#doubtful.has(entry.key);
      try {
        if (doubtful) await this.#send(() => this.#client.kv.txn(this.#guardedDelete(key, this.#created(entry)), this.#attempt()));
        else await this.#send(() => this.#client.kv.deleteRange({ key }, this.#attempt()));
        this.#live.delete(entry.key);
        const slot = slotOf(entry.key);
        if (slot !== undefined && !doubtful) this.#slots.free(entry.queue, slot);
        return;
      } catch (error) {
        if (this.#requests.ended) return;
        if (!doubtful) this.#doubtful.add(entry.key); // sent, fate unknown (or refused: doubt costs only the slot)
        if (!isRecoverableError(error as Error)) throw this.#map(error);
        await backoff(attempt);
      }
    }
  }

  /** A delete of exactly the incarnation of the key we created (etcd#22082). */
  #guardedDelete(key: Buffer, createdAt: bigint): ITxnRequest {
    return { compare: [{ key, target: 'Create', result: 'Equal', create_revision: createdAt.toString() }], success: [{ request_delete_range: { key } }], failure: [] };
  }

  /**
   * The entry's key as it stands now, if it is still the incarnation the entry stands for (keys are
   * reused), and the revision of that read.
   */
  async #lookUp(entry: Entry): Promise<{ kv: IKeyValue | undefined; revision: bigint }> {
    const response = await this.#retry(() => this.#client.kv.range({ key: Buffer.from(entry.key) }, this.#attempt()));
    const kv = response.kvs[0];
    return { kv: kv !== undefined && BigInt(kv.create_revision) === this.#created(entry) ? kv : undefined, revision: BigInt(response.header.revision) };
  }

  async read(entry: Entry): Promise<string | null> {
    return (await this.#lookUp(entry)).kv?.value.toString() ?? null;
  }

  async describe(queue: string): Promise<EntryInfo[]> {
    const prefix = queuePrefix(this.#namespace, queue);
    const response = await this.#retry(() => this.#client.kv.range({ key: Buffer.from(prefix), range_end: prefixEnd(prefix) }, this.#attempt()));
    const values = new Map(response.kvs.map((kv) => [kv.key.toString(), kv]));
    const entries = entriesFromRange(queue, prefix, response.kvs, response.header.revision);
    const leases = [...new Set(entries.map((entry) => values.get(entry.key)!.lease))];
    const ttls = new Map(
      await Promise.all(
        leases.map(async (lease) => {
          const { TTL } = await this.#retry(() => this.#client.leaseClient.leaseTimeToLive({ ID: lease, keys: false }, this.#attempt()));
          return [lease, Number(TTL)] as const;
        }),
      ),
    );
    return entries.map((entry) => {
      const kv = values.get(entry.key)!;
      const ttl = ttls.get(kv.lease) ?? -1;
      return { entry, owner: leaseHex(kv.lease), client: clientOf(prefix, entry.key), data: kv.value.toString(), ...(ttl >= 0 ? { expiresInMs: ttl * 1_000 } : {}) };
    });
  }

  async confirm(entry: Entry): Promise<boolean> {
    etcdCounters.confirmRequests += 1;
    const { kv } = await this.#lookUp(entry);
    if (kv !== undefined && kv.lease === this.#lease) return true;
    await this.#assertLeaseAlive();
    return false;
  }

  /** Our entry is gone: if the lease went with it, say so now rather than at the next keepalive. */
  async #assertLeaseAlive(): Promise<void> {
    etcdCounters.confirmRequests += 1;
    const live = await this.#retry(() => this.#client.leaseClient.leaseTimeToLive({ ID: this.#lease, keys: false }, this.#attempt()));
    if (Number(live.TTL) > 0) return;
    const reason = new SessionLostError(`etcd lease ${this.id} expired or was revoked`);
    this.#lose(reason);
    throw reason;
  }

  abandon(reason: Error): void {
    if (this.#status !== 'open') return;
    this.#end('lost', reason);
    this.#client.close();
  }

  async close(): Promise<void> {
    if (this.#status === 'closed') return;
    const wasOpen = this.#status === 'open';
    this.#end('closed', new ClosedError());
    try {
      if (wasOpen) await this.#revoke(Date.now() + Math.min(this.timeoutMs, 2_000));
    } finally {
      this.#client.close();
    }
  }

  /**
   * Entries go with the lease at once instead of at its expiry. Each attempt gets its own deadline, so
   * that a member that stopped answering costs one attempt, not the whole budget; past the budget the
   * lease is left to expire on its own.
   */
  async #revoke(until: number): Promise<void> {
    for (let attempt = 0; Date.now() < until; attempt += 1) {
      try {
        await this.#members.attempt(() => this.#client.leaseClient.leaseRevoke({ ID: this.#lease }, { deadline: Math.min(until, this.#attempt().deadline) }), this.timeoutMs);
        return;
      } catch (error) {
        if (error instanceof EtcdLeaseInvalidError || !isRecoverableError(error as Error)) return;
        await backoff(attempt);
      }
    }
  }

  /**
   * Keys of ours (they carry our lease id) that no enqueue is in flight for and no handle or waiter
   * stands for: an attempt of an enqueue applied after the entry was released, or an enqueue that
   * failed after its request reached the server. Deleted here, guarded by their create revision, so
   * that they never block a queue for the rest of the session. Costs nothing when there are none.
   */
  #removeOrphans(prefix: string, kvs: readonly StoredKey[]): void {
    const ours = `${prefix}${this.id}-`;
    for (const kv of kvs) {
      const key = kv.key.toString();
      if (!key.startsWith(ours) || this.#live.has(key) || this.#enqueuing.has(key) || this.#removing.has(key) || this.#status !== 'open') continue;
      this.#removing.add(key);
      const guarded = this.#guardedDelete(Buffer.from(key), BigInt(kv.create_revision));
      this.#send(() => this.#client.kv.txn(guarded, this.#attempt())).then(
        (response) => {
          if (response.succeeded) etcdCounters.orphansRemoved += 1;
        },
        () => undefined, // seen again at the next listing
      ).finally(() => this.#removing.delete(key));
    }
  }

  /** Keeps listing `queue` every third of the TTL for a minute: a late attempt shows up there. */
  #unsettle(queue: string): void {
    this.#unsettled.set(queue, performance.now() + 60_000);
    if (this.#sweeper !== undefined) return;
    let listing = false;
    this.#sweeper = setInterval(() => {
      if (listing) return; // the last tick's listings are still retrying (a member down)
      listing = true;
      const lists: Promise<unknown>[] = [];
      for (const [unsettled, until] of this.#unsettled) {
        if (performance.now() > until) this.#unsettled.delete(unsettled);
        else lists.push(this.list(unsettled).catch(() => undefined));
      }
      void Promise.all(lists).finally(() => (listing = false));
      if (this.#unsettled.size === 0 || this.#status !== 'open') {
        clearInterval(this.#sweeper);
        this.#sweeper = undefined;
      }
    }, Math.max(Math.floor(this.timeoutMs / 3), 50));
    this.#sweeper.unref();
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
  #ensureWatchCheck(): void {
    if (this.#watchCheck !== undefined || this.#status !== 'open') return;
    let checking = false;
    this.#watchCheck = setInterval(() => {
      if (this.#status !== 'open' || (this.#watched.size === 0 && this.#prefixWaits.size === 0)) {
        clearInterval(this.#watchCheck);
        this.#watchCheck = undefined;
        return;
      }
      if (checking) return; // the last check is still retrying (a member down)
      checking = true;
      this.#checkWatched().then(
        () => (checking = false),
        () => (checking = false),
      );
    }, Math.max(Math.floor(this.timeoutMs / 4), 50));
    this.#watchCheck.unref();
  }

  async #checkWatched(): Promise<void> {
    // Taken now: only waits that began before the reads below are judged by them.
    const byQueue = new Map<string, { keys: [string, Watched][]; changes: PrefixWait[] }>();
    const of = (prefix: string): { keys: [string, Watched][]; changes: PrefixWait[] } => {
      let waits = byQueue.get(prefix);
      if (waits === undefined) byQueue.set(prefix, (waits = { keys: [], changes: [] }));
      return waits;
    };
    for (const [id, watched] of this.#watched) of(watched.key.slice(0, watched.key.lastIndexOf('/') + 1)).keys.push([id, watched]);
    for (const wait of this.#prefixWaits.values()) of(wait.prefix).changes.push(wait);
    await Promise.all(
      [...byQueue].map(async ([prefix, { keys, changes }]) => {
        const response = await this.#listing(prefix);
        const live = new Map(response.kvs.map((kv) => [kv.key.toString(), BigInt(kv.create_revision)]));
        for (const [id, watched] of keys) if (live.get(watched.key) !== watched.createdAt) this.#wake(id);
        if (changes.length === 0) return;
        // Every change wait on one prefix waits in the same queue: its entries are read once.
        const now = entriesFromRange(changes[0]!.queue, prefix, response.kvs, response.header.revision);
        for (const wait of changes) if (!sameEntries(now, wait.seen)) wait.wake();
      }),
    );
  }

  #adopt(key: Buffer, found: IRangeResponse | undefined): void {
    const kv = found?.kvs[0];
    if (kv === undefined || kv.lease !== this.#lease) throw new BackendError(`${key.toString()} exists but does not belong to lease ${this.id}`);
    etcdCounters.adopted += 1;
  }

  /** The create revision of the incarnation of the key the entry stands for. */
  #created(entry: Entry): bigint {
    // A downgraded entry's order is not its key's create revision: the delete guard needs the latter.
    return EtcdEntry.createdAt(entry);
  }

  /**
   * One etcd watch per watched key, shared by every local waiter on it. The watcher is made and its
   * listeners attached in one go (not after `create()` resolves, a tick later): etcd may send the
   * creation and a delete together. Every watcher is tracked until it is cancelled: one left in
   * etcd3's watch manager when the client closes (its creation still pending) makes the manager
   * reconnect for ever, and keeps the process alive.
   */
  #arm(entry: Entry, watched: Watched, fromRevision: bigint): void {
    const id = this.#incarnation(entry);
    if (this.#status !== 'open') return this.#fail(id, this.#status === 'lost' ? new SessionLostError(`etcd lease ${this.id} is gone`) : new ClosedError());
    const watcher = this.#client.watch().key(entry.key).startRevision(fromRevision.toString()).watcher();
    this.#watchers.add(watcher);
    let created = false;
    watcher.on('connected', () => {
      if (created) return; // created again by etcd3 after a reconnect: the recheck below replaced it
      created = true;
      if (this.#watched.get(id) !== watched) return this.#drop(watcher);
      watched.watcher = watcher;
      countWatch(entry.key, 1);
    });
    watcher.on('delete', () => {
      if (this.muteWatchEvents) return;
      etcdCounters.notifications += 1;
      this.#wake(id);
    });
    // etcd3 watchers can go quiet after a reconnect: look again, and watch again from what we read.
    watcher.on('disconnected', () => created && this.#recheck(entry, watched, watcher));
    watcher.on('error', (error: unknown) => {
      if (created) {
        // etcd ended the watch itself (its start revision compacted away, a permission withdrawn), and
        // etcd3 has let go of it already: forgotten, not cancelled, since a cancel would wait for an
        // answer etcd never sends (the watcher would stay in etcd3's closing set until a reconnect).
        this.#watchers.delete(watcher);
        return this.#recheck(entry, watched, watcher);
      }
      this.#drop(watcher);
      // Only if the wait it was made for is still the current one for this incarnation.
      if (this.#watched.get(id) === watched) this.#fail(id, this.#map(error));
    });
  }

  /** @internal For tests: watchers etcd3 has sent a cancel for and still waits to hear the end of. */
  get watchersClosing(): number {
    return (this.#client as unknown as { watchManager: { expectedClosers: Set<unknown> } }).watchManager.expectedClosers.size;
  }

  /** Cancels a watcher of ours, once. */
  #drop(watcher: Watcher): void {
    if (this.#watchers.delete(watcher)) void watcher.cancel().catch(() => undefined);
  }

  #recheck(entry: Entry, watched: Watched, watcher: Watcher): void {
    const id = this.#incarnation(entry);
    if (watched.watcher !== watcher || this.#status !== 'open') return;
    watched.watcher = undefined;
    countWatch(entry.key, -1);
    this.#drop(watcher);
    this.#lookUp(entry).then(
      ({ kv, revision }) => {
        if (kv === undefined) this.#wake(id);
        else if (this.#watched.get(id) === watched) this.#arm(entry, watched, revision + 1n);
      },
      (error: unknown) => this.#fail(id, error),
    );
  }

  #wake(id: string): void {
    const watched = this.#watched.get(id);
    if (watched === undefined) return;
    this.#unwatch(id, watched);
    for (const waiter of watched.waiters) waiter.resolve();
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
    countWatch(watched.key, -1);
    this.#drop(watched.watcher);
    watched.watcher = undefined;
  }

  /** The watch id of an entry: its key and the create revision of the incarnation it stands for. */
  #incarnation(entry: Entry): string {
    return `${entry.key}@${this.#created(entry)}`;
  }

  #lose(reason: SessionLostError): void {
    if (this.#status !== 'open') return;
    this.#end('lost', reason);
    this.#client.close();
    this.#events?.status('lost', reason);
  }

  #end(status: 'lost' | 'closed', reason: Error): void {
    this.#status = status;
    this.#keepAlive.stop();
    clearInterval(this.#sweeper);
    for (const id of [...this.#watched.keys()]) this.#fail(id, reason);
    clearInterval(this.#watchCheck);
    for (const end of [...this.#prefixWaits.keys()]) end(reason);
    for (const watcher of [...this.#watchers]) this.#drop(watcher);
    this.#requests.end(reason);
  }

  /**
   * Each attempt of a unary request gets a deadline: a member that stopped answering (without closing
   * the connection) would otherwise hold a release or a listing until TCP gives up, many minutes,
   * while the lease lives on through another member. A request past it is retried elsewhere.
   */
  #attempt(): { deadline: number } {
    return { deadline: Date.now() + attemptMs(this.timeoutMs) };
  }

  /**
   * A request that settles when the session ends, whatever the client does with it. A member that let
   * it run out its deadline is tried last by the calls that follow.
   */
  #send<T>(request: () => Promise<T>, recover?: Recover<T>): Promise<T> {
    return this.#requests.call((done) => this.#members.send(request, this.timeoutMs, done), recover);
  }


  /** Retries requests that failed on the way (a lost reply, an unavailable member); maps the rest. */
  #retry<T>(request: () => Promise<T>): Promise<T> {
    if (this.#status !== 'open') return this.#retryAfter(request, 0); // throws the session's end
    // The first attempt without an async frame or a `.then` of its own: most requests need no other.
    return this.#send(request, (error) => {
      if (!retriable(error)) throw this.#map(error);
      return backoff(0).then(() => this.#retryAfter(request, 1));
    });
  }

  async #retryAfter<T>(request: () => Promise<T>, from: number): Promise<T> {
    for (let attempt = from; ; attempt += 1) {
      if (this.#status === 'lost') throw new SessionLostError(`etcd lease ${this.id} is gone`);
      if (this.#status === 'closed') throw new ClosedError();
      try {
        return await this.#send(request);
      } catch (error) {
        if (!retriable(error)) throw this.#map(error);
        await backoff(attempt);
      }
    }
  }

  #map(error: unknown): Error {
    if (error instanceof BatonError) return error;
    if (outOfSpace(error)) {
      return new BackendError(OUT_OF_SPACE, { cause: error });
    }
    if (error instanceof EtcdPermissionDeniedError) {
      return new AccessDeniedError(`etcd refused the request (permission denied): this user may not use ${this.#namespace}/`, { cause: error });
    }
    if (error instanceof EtcdLeaseInvalidError) {
      const reason = new SessionLostError(`etcd lease ${this.id} is gone`, { cause: error });
      this.#lose(reason);
      return reason;
    }
    return new BackendError('etcd request failed', { cause: error });
  }
}

/**
 * A request to send again: one that failed on the way (etcd3's recoverable errors), but not a write
 * refused for lack of space, which etcd counts among them (RESOURCE_EXHAUSTED) though it lasts until an
 * operator steps in: retried, every acquire would hang, past its timeout, for as long as the alarm.
 */
function retriable(error: unknown): boolean {
  return !(error instanceof BatonError) && isRecoverableError(error as Error) && !outOfSpace(error);
}

const OUT_OF_SPACE =
  'etcd is out of space (its NOSPACE alarm is raised): it refuses new entries and leases until an operator compacts and defragments it and disarms the alarm';

/** etcd's answer to a write while its NOSPACE alarm is raised. */
function outOfSpace(error: unknown): boolean {
  return error instanceof Error && error.message.includes('database space exceeded');
}

/** How long one attempt of a request may take: a third of the TTL, so a hung member costs one of three. */
function attemptMs(ttlMs: number): number {
  return Math.max(Math.floor(ttlMs / 3), 500);
}

/** How many queues' range reads are kept. */
const RANGES_KEPT = 64;
/** The value of an entry without data (never written to). */
const EMPTY = Buffer.alloc(0);

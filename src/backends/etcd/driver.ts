import type { Etcd3, IKeyValue, IRangeResponse } from 'etcd3';
import { isRecoverableError } from 'etcd3';

import { BoundedMap } from '../../../recipes/bounded-map.js';
import {
  type Abortable,
  type Ahead,
  type AheadAsked,
  type Enqueued,
  type EnqueuedAhead,
  type Entry,
  type GiveUp,
  type GuardedOp,
} from '../../../recipes/contract.js';
import type { Driver, DriverEvents, EntryInfo } from '../../driver-port.js';
import { backstopEveryMs, orphanSweepEveryMs } from '../../timing.js';
import { DriverCore } from '../core.js';
import type { Start } from '../requests.js';
import { sameEntries } from '../waiters.js';
import { WatchBackstop } from './backstop.js';
import { describeQueue } from './describe.js';
import { Enqueuer } from './enqueue.js';
import { attemptMs, etcdFailures } from './failures.js';
import { guardedKey, guardedTxn } from './guarded.js';
import { KeepAlive } from './keepalive.js';
import {
  entriesFromRange,
  EtcdEntry,
  foreignKeys,
  leaseHex,
  prefixEnd,
  queuePrefix,
  slotOf,
  type StoredKey,
} from './keys.js';
import type { Members } from './members.js';
import { type EtcdDriverOptions, type OpenedLease, openLease } from './open.js';
import { guardedDelete, OwnEntries } from './own-entries.js';
import { PrefixWatches } from './prefix-watches.js';
import { type EtcdCounters, etcdCounters, type EtcdProbe, type EtcdView } from './probe.js';
import { revokeEntry } from './revoke.js';
import { EtcdWatchers, KeyWatches } from './watches.js';

export type { EtcdDriverOptions } from './open.js';

/**
 * The etcd backend on etcd3: one lease per session, shared by every recipe on it. This file holds the
 * contract's requests; the rest is in the files beside it (open, lease, the enqueue's Txn, watches,
 * prefix watches, the watch backstop, own keys and orphans).
 */
export class EtcdDriver implements Driver {
  /** None: etcd's Go recipes wait for every key created before theirs, baton's too. */
  readonly dialects: readonly string[] = [];
  readonly id: string;
  readonly timeoutMs: number;
  readonly openedAt: number;
  readonly #client: Etcd3;
  readonly #lease: string;
  readonly #namespace: string;
  readonly #members: Members;
  readonly #core: DriverCore;
  readonly #counters: EtcdCounters;
  readonly #probe: EtcdProbe | undefined;
  readonly #own: OwnEntries;
  readonly #enqueuer: Enqueuer;
  readonly #watchers: EtcdWatchers;
  readonly #keyWatches: KeyWatches;
  readonly #prefixWatches: PrefixWatches;
  readonly #backstop: WatchBackstop;
  readonly #keepAlive: KeepAlive;
  /** The delete in flight for a key: a second withdraw joins it rather than sending another. */
  readonly #deleting = new Map<string, Promise<void>>();
  readonly #ranges = new BoundedMap<string, { key: Buffer; range_end: Buffer; keys_only: true }>(RANGES_KEPT);

  static async open(options: EtcdDriverOptions, probe?: EtcdProbe): Promise<EtcdDriver> {
    return new EtcdDriver(await openLease(options), options, probe);
  }

  private constructor(
    { client, members, lease, timeoutMs, openedAt }: OpenedLease,
    options: EtcdDriverOptions,
    probe: EtcdProbe | undefined,
  ) {
    this.#client = client;
    this.#lease = lease;
    this.#namespace = options.namespace;
    this.id = leaseHex(lease);
    this.timeoutMs = timeoutMs;
    this.openedAt = openedAt;
    this.#members = members;
    this.#probe = probe;
    this.#counters = probe?.counters ?? etcdCounters();
    this.#core = new DriverCore(etcdFailures(this.id, this.#namespace), {
      onEnd: (reason) => this.#onEnd(reason),
      onLost: () => this.#client.close(),
    });
    const isOpen = (): boolean => this.#core.isOpen;
    const endError = (): Error | undefined => this.#core.endError();
    const streamFailed = (error: unknown): Error => this.#core.streamFailed(error);
    this.#own = new OwnEntries({
      id: this.id,
      counters: this.#counters,
      sweepEveryMs: orphanSweepEveryMs(timeoutMs),
      isOpen,
      sendTxn: (request) => this.#core.send(this.#rpc(() => this.#client.kv.txn(request, this.#attempt()))),
      list: (queue) => this.list(queue),
    });
    this.#enqueuer = new Enqueuer({
      id: this.id,
      lease,
      namespace: this.#namespace,
      client,
      core: this.#core,
      counters: this.#counters,
      own: this.#own,
      rpc: (request) => this.#rpc(request),
      attempt: () => this.#attempt(),
      queueRange: (prefix) => this.#queueRange(prefix),
      parseAndSweep: (queue, prefix, kvs) => this.#parseAndSweep(queue, prefix, kvs),
      withdraw: (entry) => this.withdraw(entry),
    });
    this.#watchers = new EtcdWatchers(client, probe, this.#counters);
    this.#keyWatches = new KeyWatches(this.#watchers, {
      endError,
      isOpen,
      streamFailed,
      lookUp: (entry) => this.#lookUp(entry),
    });
    this.#prefixWatches = new PrefixWatches(this.#watchers, {
      endError,
      streamFailed,
      changed: async (queue, prefix, seen) =>
        !sameEntries(this.#parseAndSweep(queue, prefix, (await this.#listing(prefix)).kvs), seen),
    });
    this.#backstop = new WatchBackstop(
      this.#keyWatches,
      this.#prefixWatches,
      { isOpen, listing: (prefix) => this.#listing(prefix) },
      backstopEveryMs(timeoutMs),
    );
    this.#keepAlive = new KeepAlive(
      {
        client,
        members,
        lease,
        id: this.id,
        timeoutMs,
        rpc: (request) => this.#rpc(request),
        attempt: () => this.#attempt(),
      },
      this.#core,
    );
    probe?.expose(this.#view());
  }

  attach(events: DriverEvents): void {
    this.#core.attach(events);
  }

  /**
   * The keys-only read of a queue's range, made once per queue (the 64 most recent): every enqueue and
   * listing sends it, and its two buffers cost more than the rest of the request to build.
   */
  #queueRange(prefix: string): { key: Buffer; range_end: Buffer; keys_only: true } {
    return (
      this.#ranges.touch(prefix) ??
      this.#ranges.getOrSet(prefix, () => ({ key: Buffer.from(prefix), range_end: prefixEnd(prefix), keys_only: true }))
    );
  }

  enqueue(
    queue: string,
    kind: string,
    at?: Entry,
    data?: string,
    _dialect?: string,
    giveUp?: GiveUp,
  ): Promise<Enqueued> {
    return this.#enqueuer.enqueue(queue, kind, at, data, giveUp);
  }

  enqueueAhead(
    queue: string,
    kind: string,
    asked: AheadAsked,
    data?: string,
    _dialect?: string,
    giveUp?: GiveUp,
  ): Promise<EnqueuedAhead> {
    return this.#enqueuer.enqueueAhead(queue, kind, asked.page, data, giveUp);
  }

  async list(queue: string): Promise<readonly Entry[]> {
    const prefix = queuePrefix(this.#namespace, queue);
    const response = await this.#listing(prefix);
    return this.#parseAndSweep(queue, prefix, response.kvs);
  }

  /**
   * One reverse range by create revision up to our entry's: our key first while it exists, then the
   * keys created just before it, at most `limit` of them. Entries behind ours were created after it
   * and are not read; neither is an entry placed at another's order after ours was created (see
   * `Backend.listBefore`). etcd still scans the prefix to filter and sort, but answers only these.
   */
  async listBefore(queue: string, self: Entry, limit?: number): Promise<Ahead> {
    const prefix = queuePrefix(this.#namespace, queue);
    const createdAt = EtcdEntry.createdAt(self);
    const request = {
      ...this.#queueRange(prefix),
      sort_order: 'Descend' as const,
      sort_target: 'Create' as const,
      max_create_revision: createdAt.toString(),
      ...(limit === undefined ? {} : { limit: limit + 1 }),
    };
    const response = await this.#core.retry(this.#rpc(() => this.#client.kv.range(request, this.#attempt())));
    const present = response.kvs.some(
      (kv) => kv.key.toString() === self.key && BigInt(kv.create_revision) === createdAt,
    );
    const entries = this.#parseAndSweep(queue, prefix, response.kvs);
    const ahead: Entry[] = [];
    for (let i = entries.length - 1; i >= 0; i -= 1) if (entries[i]!.order < self.order) ahead.push(entries[i]!);
    return { present, entries: ahead, more: response.more };
  }

  /** The keys of a queue's range, retried like every read. */
  #listing(prefix: string): Promise<IRangeResponse> {
    const range = this.#queueRange(prefix);
    return this.#core.retry(this.#rpc(() => this.#client.kv.range(range, this.#attempt())));
  }

  /**
   * The entries of a queue's keys, and two things done on the way: this session's orphans among them
   * are deleted (see `OwnEntries.sweepOrphans`), and keys baton did not write are reported (once each).
   */
  #parseAndSweep(queue: string, prefix: string, kvs: readonly StoredKey[]): Entry[] {
    this.#counters.queueKeysRead += kvs.length;
    this.#own.sweepOrphans(prefix, kvs);
    const entries = entriesFromRange(queue, prefix, kvs);
    if (entries.length < kvs.length) this.#core.foreign.report(queue, foreignKeys(prefix, kvs));
    return entries;
  }

  waitGone(entry: Entry, signal: Abortable): Promise<void> {
    const waiting = this.#keyWatches.waitGone(entry, signal);
    this.#backstop.ensure();
    return waiting;
  }

  async waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    signal.throwIfAborted();
    if (this.#probe?.beforePrefixWatch !== undefined) await this.#probe.beforePrefixWatch();
    // No listing first: the one the watch makes once it exists tells a change made before it.
    const waiting = this.#prefixWatches.watch(queue, queuePrefix(this.#namespace, queue), seen, signal);
    this.#backstop.ensure();
    await waiting;
  }

  withdraw(entry: Entry): Promise<void> {
    // Only the live incarnation is deleted: a handle's late second release finds it gone already.
    if (this.#own.live.get(entry.key) !== EtcdEntry.createdAt(entry)) return Promise.resolve();
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

  /**
   * A plain delete first: the key is ours while its slot is taken, and an answered request was applied
   * once and is not in flight anywhere else. Only an attempt whose fate is unknown can be applied later,
   * after the slot was reused; so after one the slot is retired for good, and the retries compare the
   * create revision so that they too can only delete this incarnation.
   */
  #delete(entry: Entry): Promise<void> {
    const key = Buffer.from(entry.key);
    const own = this.#own;
    let doubtful = false;
    return this.#core.withdraw({
      key: entry.key,
      attempt: () => {
        // The doubt outlives this call: a release retried after a failure must not free the slot either.
        doubtful = own.doubtful.has(entry.key);
        const request: () => Promise<unknown> = doubtful
          ? () => this.#client.kv.txn(guardedDelete(key, EtcdEntry.createdAt(entry)), this.#attempt())
          : () => this.#client.kv.deleteRange({ key }, this.#attempt());
        return this.#rpc(request);
      },
      done: () => {
        own.live.delete(entry.key);
        const slot = slotOf(entry.key);
        if (slot !== undefined && !doubtful) own.slots.free(entry.queue, slot);
      },
      // Sent, fate unknown (or refused: doubt costs only the slot).
      failed: () => own.doubtful.add(entry.key),
      retriable: (error) => isRecoverableError(error as Error),
    });
  }

  /**
   * The entry's key as it stands now, if it is still the incarnation the entry stands for (keys are
   * reused).
   */
  async #lookUp(entry: Entry): Promise<IKeyValue | undefined> {
    const response = await this.#core.retry(
      this.#rpc(() => this.#client.kv.range({ key: Buffer.from(entry.key) }, this.#attempt())),
    );
    const kv = response.kvs[0];
    return kv !== undefined && BigInt(kv.create_revision) === EtcdEntry.createdAt(entry) ? kv : undefined;
  }

  async read(entry: Entry): Promise<string | null> {
    return (await this.#lookUp(entry))?.value.toString() ?? null;
  }

  describe(queue: string): Promise<EntryInfo[]> {
    return describeQueue(this.#namespace, queue, {
      range: (request) => this.#core.retry(this.#rpc(() => this.#client.kv.range(request, this.#attempt()))),
      timeToLive: (lease) =>
        this.#core.retry(
          this.#rpc(() => this.#client.leaseClient.leaseTimeToLive({ ID: lease, keys: false }, this.#attempt())),
        ),
    });
  }

  async confirm(entry: Entry): Promise<boolean> {
    this.#counters.confirmRequests += 1;
    const kv = await this.#lookUp(entry);
    if (kv !== undefined && kv.lease === this.#lease) return true;
    this.#counters.confirmRequests += 1;
    await this.#keepAlive.assertAlive();
    return false;
  }

  abandon(reason: Error): void {
    this.#core.abandon(reason, () => this.#client.close());
  }

  close(): Promise<void> {
    return this.#core.close(this.timeoutMs, {
      onServer: (until) => this.#keepAlive.revoke(until),
      disconnect: () => this.#client.close(),
    });
  }

  /** The session ends: the keepalive, the sweeper and the backstop stop; every watch and wait fails with `reason`. */
  #onEnd(reason: Error): void {
    this.#keepAlive.stop();
    this.#own.stop();
    this.#keyWatches.failAll(reason);
    this.#backstop.stop();
    this.#prefixWatches.endAll(reason);
    this.#watchers.dropAll();
  }

  /**
   * Each attempt of a unary request gets a deadline: a member that stopped answering (without closing
   * the connection) would otherwise hold a release or a listing until TCP gives up, many minutes,
   * while the lease lives on through another member. A request past it is retried elsewhere.
   */
  #attempt(): { deadline: number } {
    return { deadline: Date.now() + attemptMs(this.timeoutMs) };
  }

  /** A unary request as the core sends it: a member that let it run out its deadline is tried last by the calls that follow. */
  #rpc<T>(request: () => Promise<T>): Start<T> {
    return (done) => this.#members.send(request, this.timeoutMs, done);
  }

  /** What `baton-locks/testing` may see (see `EtcdView`). */
  #view(): EtcdView {
    const driver = this;
    return {
      get keepAliveMember() {
        return driver.#keepAlive.member;
      },
      get keepAliveOpens() {
        return driver.#keepAlive.opens;
      },
      get prefersLiveMembers() {
        return driver.#members.installed;
      },
      get watchersClosing() {
        return driver.#watchers.closing;
      },
    };
  }

  async guardedWrite(entry: Entry, op: GuardedOp): Promise<boolean> {
    const request = guardedTxn(this.#namespace, this.#lease, entry, op);
    const response = await this.#core.retry(this.#rpc(() => this.#client.kv.txn(request, this.#attempt())));
    return response.succeeded;
  }

  async guardedRead(queue: string, name: string): Promise<string | null> {
    const key = guardedKey(this.#namespace, queue, name);
    const response = await this.#core.retry(this.#rpc(() => this.#client.kv.range({ key }, this.#attempt())));
    return response.kvs[0]?.value.toString() ?? null;
  }

  /** An operator's force release of any session's entry (see revoke.ts). */
  revoke(entry: Entry): Promise<boolean> {
    return revokeEntry(this.#namespace, entry, (request) =>
      this.#core.retry(this.#rpc(() => this.#client.kv.txn(request, this.#attempt()))),
    );
  }
}

/** How many queues' range reads are kept. */
const RANGES_KEPT = 64;

import zookeeper from 'node-zookeeper-client';
import type { Abortable, Entry, Enqueued } from '../../../recipes/contract.js';
import { AccessDeniedError, BackendError, BatonError, ClosedError, InvalidArgumentError, SessionLostError } from '../../../recipes/errors.js';
import { ForeignReporter, type Driver, type DriverEvents, type EntryInfo } from '../driver.js';
import { addWaiter, backoff, fromPromise, InFlight, sameEntries, settleWaiters, type Recover, type Start, type Waiter } from '../requests.js';
import { aclFor, rememberSocketErrors, canDropDataWatchers, corked, corkForTick, createEntryStart, createStart, dropDataWatcher, dropTornFrames, existsStart, getChildrenStart, getData, getDataStat, isCode, mkdirp, onConnecting, reachLeaderStart, removeStart, sendAuthFirst, watchChildren, watchDataStart, watchStatStart, requestIdWrap, ZkCode, zkLong, ZkServerCode, type AclPolicy, type ZkClient, type ZkStat } from './client.js';
import { describeDialFailure } from '../dial.js';
import { sendDirectly } from './direct.js';
import { HeartbeatPace } from './heartbeat-pace.js';
import { compiledRecords } from './jute.js';
import { readRepliesWith } from './replies.js';
import { entryPrefix, foreignChildren, learnToken, ListingParser, parseEntryName, sequenceOf as childSequence, trailingSequence, UuidSequence, uuidKey, ZK_DIALECTS, type ZkDialect } from './names.js';

export interface ZkDriverOptions {
  /** `host:port,host:port` */
  readonly hosts: string;
  /** Absolute znode path every queue lives under, e.g. `/baton`. */
  readonly namespace: string;
  readonly sessionTimeoutMs: number;
  readonly connectTimeoutMs: number;
  /** Sent before any request (and again after every reconnect, by the client). */
  readonly auth?: readonly { readonly scheme: string; readonly credentials: string }[];
  /** For every znode baton creates. */
  readonly acl?: AclPolicy;
  /** Gives up connecting when it aborts (the client is closed). */
  readonly signal?: AbortSignal | undefined;
}

/**
 * Counters for tests and benchmarks: watch notifications received (for waiters), entries adopted after a
 * lost reply, orphans removed, and enqueues that found their entry alone without a listing (and that
 * tried to, but had to list after all).
 */
export const zkCounters = { notifications: 0, adopted: 0, orphansRemoved: 0, unlisted: 0, unlistedMissed: 0, recycled: 0 };

/**
 * @internal The sequence from which a queue directory is deleted once a delete of ours may have left
 * it empty (see `ZkDriver.#recycle`). Tests lower it; half of the 2^31 that ZooKeeper can count to.
 */
export const zkLimits = { recycleFrom: 2 ** 30 };

const MAX_PARENT_RETRIES = 10;
/** How many directories found quiet a session keeps (and keeps a watch on), the most recently used. */
const QUIET_DIRECTORIES = 64;

/**
 * A queue directory in which this session found no entry but its own, with what it takes to prove from
 * a create's reply alone that the entry it creates there next is again the only one (see
 * `ZkDriver.#aloneAfter`). Only within one incarnation of the directory, which a watch on it stands for.
 * Kept while the watch stands (a 3.4 client cannot remove it), also when the directory is busy again.
 */
interface Quiet {
  /** The incarnation (the directory's czxid) of the listing that found it quiet. */
  czxid: bigint;
  /**
   * How many children the directory had been given by then, and by this session's unlisted entries
   * since; -1 while enqueues list (the last listing did not find it quiet, or someone else queued
   * since the one before: taking turns with another session, an unlisted create would miss each time).
   */
  creates: number;
  /** The sequence this session's next create takes if nobody else creates one meanwhile; -1 if unknown. */
  next: number;
  /** Whether a request setting the watch is on its way. */
  arming: boolean;
  /** This session's entries in it that existed then or were created unlisted since, and whose delete has not been answered. */
  readonly mine: Set<string>;
  /** The connection (see `#connection`) on which the watch on the directory was confirmed, or -1. */
  watched: number;
  /** The directory's watcher: one function, so that the client keeps one registration of it. */
  readonly watcher: (event: zookeeper.Event) => void;
}

/** The ZooKeeper backend on node-zookeeper-client: one client (one ZooKeeper session) per driver. */
export class ZkDriver implements Driver {
  readonly dialects = ZK_DIALECTS;
  readonly id: string;
  readonly timeoutMs: number;
  readonly openedAt: number;
  readonly #client: ZkClient;
  readonly #namespace: string;
  readonly #acl: zookeeper.ACL[];
  readonly #sessionId: bigint;
  readonly #waiters = new Map<string, Set<Waiter>>();
  /** The watcher function registered for each watched path. */
  readonly #watchers = new Map<string, (event: zookeeper.Event) => void>();
  /** Waiters for a change of a queue directory's children, keyed by the directory. */
  readonly #dirWaiters = new Map<string, Set<Waiter>>();
  /** The one watcher function per directory: the client then keeps one registration per path. */
  readonly #dirWatchers = new Map<string, (event: zookeeper.Event) => void>();
  #status: 'open' | 'lost' | 'closed' = 'open';
  #suspended = false;
  #events: DriverEvents | undefined;
  readonly #foreign = new ForeignReporter();
  readonly #listings = new ListingParser();
  readonly #uuids = new UuidSequence();
  /** The keys of this session's entries: enqueued (or adopted) and not yet withdrawn. */
  readonly #mine = new Set<string>();
  /**
   * The uuids (as `uuidKey` gives them) of enqueues still running: a child carrying one may be an entry not yet returned, until
   * the enqueue knows its entry (the value): any other child carrying the uuid is then a copy, a create
   * of an earlier attempt applied after its lost reply was searched for.
   */
  readonly #creating = new Map<string, string | undefined>();
  /** Orphans whose delete is on its way. */
  readonly #sweeping = new Set<string>();
  /**
   * Whether this session may own a child it does not know of: set for good by the first enqueue whose
   * create failed or that failed after its create (until then no listing is searched for orphans).
   */
  #orphansPossible = false;
  /** Directories found quiet, the most recently used last (see `Quiet`). */
  readonly #quiet = new Map<string, Quiet>();
  /** Counts the client's state changes: a watch confirmed on one connection says nothing of the time another was down. */
  #connection = 0;
  /** Every request still in flight settles with the reason the session ended. */
  readonly #requests = new InFlight((error) => this.#onRequestFailed(error));
  readonly #pace: HeartbeatPace;
  /** When the heartbeats still waiting for their answers were sent, oldest first. */
  readonly #unanswered: number[] = [];
  /**
   * No later than the leader last heard of the session, give or take the ping lag the margin covers:
   * the send time of the last heartbeat, or of the last connect request (at first, the session's open).
   */
  #touchedAt: number;
  /** When the client last began a connection (wrote a connect request). */
  #connectingAt: number;
  /** Numbers requests from 1 again before the client's ids overflow (see `requestIdWrap`). */
  readonly #wrapIds: () => void;

  static async open(options: ZkDriverOptions): Promise<ZkDriver> {
    options.signal?.throwIfAborted();
    const client = zookeeper.createClient(options.hosts, {
      sessionTimeout: options.sessionTimeoutMs,
      spinDelay: 100,
      retries: 0,
    });
    dropTornFrames(client);
    sendAuthFirst(client);
    useCompiledRecords(client);
    for (const { scheme, credentials } of options.auth ?? []) client.addAuthInfo(scheme, Buffer.from(credentials));
    const openedAt = performance.now();
    await connected(client, options);
    return new ZkDriver(client, options, openedAt);
  }

  private constructor(client: ZkClient, options: ZkDriverOptions, openedAt: number) {
    this.openedAt = openedAt;
    this.#client = client;
    this.#namespace = options.namespace;
    this.#acl = aclFor(options.acl ?? 'open');
    this.#wrapIds = requestIdWrap(client);
    this.#sessionId = zkLong(client.getSessionId());
    this.id = this.#sessionId.toString(16).padStart(16, '0');
    this.timeoutMs = client.getSessionTimeout();
    client.on('state', (state) => this.#onState(state));
    // node-zookeeper-client never reports a server that stops answering, and hides its pings; this
    // request is our own ping, whose replies move the session's loss deadline forward, at the pace
    // and with the credit of heartbeat-pace.ts.
    this.#touchedAt = openedAt;
    this.#connectingAt = openedAt;
    onConnecting(client, () => (this.#connectingAt = performance.now()));
    this.#pace = new HeartbeatPace(this.timeoutMs, () => this.#ping());
  }

  #ping(): void {
    if (this.#status !== 'open') return;
    const oldest = this.#unanswered[0];
    // The client never gives up on a server that stopped answering (a hung member, or a connection
    // the server dropped without closing it). Like ZooKeeper's own Java client, drop a connection
    // that has been silent for a third of the session timeout, so that the client moves to another
    // member while the session can still be saved there.
    if (oldest !== undefined && !this.#suspended && performance.now() - oldest > this.timeoutMs / 3) {
      destroySocket(this.#client);
      return;
    }
    // Sent on schedule even while an earlier one waits for a slow answer (two at most): each one that
    // reaches a follower tells the leader, with the follower's next ping answer, that the session lives.
    if (this.#unanswered.length >= 2) return;
    const sentAt = performance.now();
    if (!this.#pace.due(sentAt, this.#touchedAt, this.#events?.busy?.() ?? false)) return;
    // Credited no later than one busy interval after the previous heartbeat (or the reconnect, which the
    // leader itself re-validates): see heartbeat-pace.ts.
    const credit = this.#pace.credit(sentAt, this.#touchedAt);
    this.#touchedAt = sentAt;
    this.#unanswered.push(sentAt);
    const settled = (): void => {
      const at = this.#unanswered.indexOf(sentAt);
      if (at !== -1) this.#unanswered.splice(at, 1);
    };
    // A sync, not a read: a follower cut off from the leader goes on answering reads (until it notices,
    // syncLimit x tickTime later) while the leader, which expires sessions, hears nothing of ours.
    this.#send(reachLeaderStart(this.#client, '/').start).then(
      () => {
        settled();
        this.#events?.ack(credit);
      },
      settled,
    );
  }

  /** @internal When the client last wrote a connect request (tests). */
  get connectingAt(): number {
    return this.#connectingAt;
  }

  /** @internal Whether the heartbeat is a `sync`, which only a member in touch with the leader answers (tests). */
  get heartbeatReachesLeader(): boolean {
    return reachLeaderStart(this.#client, '/').leader;
  }

  /** @internal For fault tests that end the session from a second connection, as ZooKeeper allows. */
  sessionCredentials(): { sessionId: Buffer; sessionPassword: Buffer } {
    return { sessionId: this.#client.getSessionId(), sessionPassword: this.#client.getSessionPassword() };
  }

  attach(events: DriverEvents): void {
    this.#events = events;
    if (events.marginMs !== undefined) this.#pace.setMargin(events.marginMs);
    this.#foreign.attach(events);
  }

  abandon(reason: Error): void {
    if (this.#status !== 'open') return;
    this.#end('lost', reason);
    this.#client.close();
    // The server stopped answering, so it will not close the connection either.
    destroySocket(this.#client);
  }

  /** Stops using the session: no more heartbeats, every waiter and request in flight fails with `reason`. */
  #end(status: 'lost' | 'closed', reason: Error): void {
    this.#status = status;
    this.#pace.stop();
    this.#failWaiters(reason);
    this.#requests.end(reason);
  }

  /**
   * A request that settles when the session ends, whatever the client does with it. Sent at once when
   * nothing else is in flight (a lone request: one lock's next step); otherwise the socket is corked for
   * the rest of the turn, since replies to the requests in flight tend to arrive together and each asks
   * again in the same turn (many locks on one session), and their requests then leave in one write.
   * Deferring a lone request's write to the end of the turn gains nothing and delays it.
   */
  #send<T>(request: Start<T>, recover?: Recover<T>): Promise<T> {
    this.#beforeSend();
    return this.#requests.call(request, recover);
  }

  /** Before every request: ids that cannot overflow, and the cork when others are in flight (see `#send`). */
  #beforeSend(): void {
    this.#wrapIds();
    if (this.#requests.size > 0) corkForTick(this.#client);
  }

  /** The directory that holds a queue's entries. */
  dir(queue: string): string {
    return `${this.#namespace}/${queue}`;
  }

  async enqueue(queue: string, kind: string, at?: Entry, data?: string, dialect?: string): Promise<Enqueued> {
    const uuid = this.#uuids.next();
    const id = uuidKey(uuid);
    const dir = this.dir(queue);
    const payload = data === undefined ? undefined : Buffer.from(data);
    // Placed `at` another entry: not sequential, but named with that entry's sequence so it sorts there.
    if (dialect !== undefined && !(ZK_DIALECTS as readonly string[]).includes(dialect)) throw new InvalidArgumentError('interop', dialect, `one of ${ZK_DIALECTS.join(', ')}`);
    const prefix = entryPrefix(dir, uuid, kind, dialect as ZkDialect | undefined);
    const path = at === undefined ? prefix : `${prefix}${sequenceOf(at)}`;
    const mode = at === undefined ? zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL : zookeeper.CreateMode.EPHEMERAL;
    // A downgraded read keeps the token of the write whose place it takes: it goes on with that hold.
    const inherited = at?.fencingToken;
    this.#creating.set(id, undefined);
    try {
      for (let attempt = 0; ; attempt += 1) {
        this.#assertOpen();
        // Sent back to back in one write: the server processes the listing after the create, so it shows
        // it. With other requests in flight, that write waits for the end of the turn too (see `#send`).
        // In a directory found quiet the create goes alone, and the listing only if its reply cannot
        // show our entry alone (`#aloneAfter`).
        this.#beforeSend();
        let creating: Promise<{ path: string; czxid: bigint }>;
        let listing: Promise<{ children: string[]; stat: ZkStat }> | undefined;
        if (at === undefined && attempt === 0 && this.#mayGoUnlisted(dir)) {
          creating = this.#requests.call(createEntryStart(this.#client, path, mode, payload, this.#acl));
        } else {
          [creating, listing] = corked(this.#client, () => [
            this.#requests.call(createEntryStart(this.#client, path, mode, payload, this.#acl)),
            this.#requests.call(getChildrenStart(this.#client, dir)),
          ] as const);
          // Read only once the create succeeded; until then its failure must not go unhandled.
          listing.catch(() => undefined);
        }
        let created: string;
        let token: bigint;
        try {
          ({ path: created, czxid: token } = await creating);
          token = inherited ?? token;
        } catch (error) {
          if (!isCode(error, ZkCode.NO_NODE)) this.#orphansPossible = true; // a lost reply may hide a create
          if (isCode(error, ZkCode.NO_NODE) && attempt < MAX_PARENT_RETRIES) {
            await this.#retry(fromPromise(() => mkdirp(this.#client, dir, this.#acl)));
            continue;
          }
          if (!retriable(error)) throw this.#map(error);
          const adopted = await this.#findOwn(queue, dir, id, inherited);
          if (adopted !== undefined) return adopted;
          await backoff(attempt);
          continue;
        }
        let listed: { children: string[]; stat: ZkStat } | undefined;
        if (listing === undefined) {
          let alone: Enqueued | undefined;
          try {
            alone = this.#aloneAfter(queue, dir, id, created, token);
          } catch (error) {
            return this.#dropCreated(created, error);
          }
          if (alone !== undefined) return alone;
        } else {
          listed = await listing.catch(() => undefined);
        }
        listed ??= await this.#retry(getChildrenStart(this.#client, dir)).catch((error: unknown) => this.#dropCreated(created, error));
        let enqueued: Enqueued;
        try {
          enqueued = this.#enqueued(queue, dir, id, created, listed.children, zkLong(listed.stat.czxid), token);
        } catch (error) {
          return this.#dropCreated(created, error);
        }
        if (at === undefined) this.#noteQuiet(dir, created, listed, enqueued.queue);
        return enqueued;
      }
    } catch (error) {
      // The create may have been applied without our knowing its name (a lost reply, or a failure
      // after it): from now on, listings are searched for this session's orphans.
      this.#orphansPossible = true;
      throw error;
    } finally {
      this.#creating.delete(id);
    }
  }

  /**
   * An enqueue that fails after its create succeeded: the entry is deleted (as a withdraw would, in the
   * background) rather than left to hold up the queue until a listing of this session's finds it.
   */
  #dropCreated(created: string, error: unknown): never {
    this.#remove(created).catch(() => undefined);
    throw error;
  }

  list(queue: string, through?: Entry): Promise<readonly Entry[]> {
    const dir = this.dir(queue);
    const listing = getChildrenStart(this.#client, dir);
    // Parsed as the answer arrives, so that the caller's promise is settled by the request itself (a
    // woken waiter lists on the handoff's critical path).
    const parsed: Start<readonly Entry[]> = (done) =>
      listing((error, listed) => {
        if (error) return isCode(error, ZkCode.NO_NODE) ? done(null, []) : done(error);
        let entries: Entry[];
        try {
          entries = this.#entriesFromListing(queue, dir, listed!.children, zkLong(listed!.stat.czxid), through);
        } catch (failure) {
          return done(failure);
        }
        done(null, entries);
      });
    return this.#retry(parsed);
  }

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

  waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    signal.throwIfAborted();
    const dir = this.dir(queue);
    const waiters = this.#dirWaiters.get(dir) ?? new Set<Waiter>();
    this.#dirWaiters.set(dir, waiters);
    const waiting = addWaiter(waiters, signal, () => {
      if (waiters.size === 0 && this.#dirWaiters.get(dir) === waiters) this.#dirWaiters.delete(dir);
    });
    this.#armDir(queue, dir, seen);
    return waiting;
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
        zkCounters.notifications += 1;
        if (this.#dirWatchers.get(dir) === onEvent) this.#dirWatchers.delete(dir);
        this.#wakeDir(dir);
      };
      this.#dirWatchers.set(dir, (watcher = onEvent));
    }
    const registered = watcher;
    this.#retry(fromPromise(() => watchChildren(this.#client, dir, registered))).then(
      (listed) => {
        const now = listed === null ? [] : this.#entriesFromListing(queue, dir, listed.children, zkLong(listed.stat.czxid));
        if (!sameEntries(now, seen)) this.#wakeDir(dir);
      },
      (error: unknown) => this.#failDir(dir, error),
    );
  }

  #wakeDir(dir: string): void {
    settleWaiters(this.#dirWaiters, dir);
  }

  #failDir(dir: string, error: unknown): void {
    settleWaiters(this.#dirWaiters, dir, { error });
  }

  withdraw(entry: Entry): Promise<void> {
    return this.#remove(entry.key);
  }

  /** Deletes an entry of ours, retried until it is gone or the session is (see `withdraw`). */
  #remove(key: string): Promise<void> {
    if (this.#status !== 'open') return Promise.resolve();
    // The first attempt without an async frame of its own: most deletes need no other.
    return this.#send(removeStart(this.#client, key)).then(
      () => this.#gone(key),
      (error: unknown) => this.#removeFailed(key, error),
    );
  }

  /** A delete that failed: done if the entry or the session is gone, otherwise sent again after a pause. */
  async #removeFailed(key: string, failure: unknown): Promise<void> {
    for (let attempt = 0, error = failure; ; attempt += 1) {
      if (isCode(error, ZkCode.NO_NODE)) this.#gone(key);
      if (isCode(error, ZkCode.NO_NODE) || sessionGone(error) || this.#requests.ended) return;
      if (!retriable(error)) throw this.#map(error);
      await backoff(attempt);
      if (this.#status !== 'open') return;
      try {
        await this.#send(removeStart(this.#client, key));
        this.#gone(key);
        return;
      } catch (next) {
        error = next;
      }
    }
  }

  /** The entry's data; its fencing token is learned on the way (a listed entry's is not known until read). */
  async read(entry: Entry): Promise<string | null> {
    const node = await this.#retry(fromPromise(() => getDataStat(this.#client, entry.key)));
    if (node === null) return null;
    learnToken(entry, zkLong(node.stat.czxid));
    return node.data.toString();
  }

  async describe(queue: string): Promise<EntryInfo[]> {
    const entries = await this.list(queue);
    // Sent together: one round trip for the whole queue. An entry gone meanwhile is left out.
    const found = await Promise.all(entries.map((entry) => this.#retry(fromPromise(() => getDataStat(this.#client, entry.key)))));
    return entries.flatMap((entry, index) => {
      const node = found[index];
      if (node === null || node === undefined) return [];
      learnToken(entry, zkLong(node.stat.czxid));
      const owner = zkLong(node.stat.ephemeralOwner).toString(16).padStart(16, '0');
      const client = parseEntryName(entry.key.slice(entry.key.lastIndexOf('/') + 1))?.form ?? 'unknown';
      return [{ entry, owner, client, createdAt: Number(zkLong(node.stat.ctime)), data: node.data.toString() }];
    });
  }

  async confirm(entry: Entry): Promise<boolean> {
    const stat = await this.#retry(existsStart(this.#client, entry.key));
    return stat !== null && zkLong(stat.ephemeralOwner) === this.#sessionId;
  }

  async close(): Promise<void> {
    if (this.#status === 'closed') return;
    const wasOpen = this.#status === 'open';
    this.#end('closed', new ClosedError());
    if (!wasOpen) return;
    const closed = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.min(this.timeoutMs, 2_000));
      this.#client.once('disconnected', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.#client.close();
    await closed;
    destroySocket(this.#client);
  }

  /** After a lost create reply: our node, if the create reached the server, carries our uuid. */
  async #findOwn(queue: string, dir: string, uuid: string, inherited: bigint | undefined): Promise<Enqueued | undefined> {
    let listing: { children: string[]; stat: ZkStat };
    try {
      listing = await this.#retry(getChildrenStart(this.#client, dir));
    } catch (error) {
      if (isCode(error, ZkCode.NO_NODE)) return undefined; // no directory, so the create cannot have happened
      throw error;
    }
    // Two attempts may both have been applied: the earlier place is ours, the copy is swept as an orphan.
    const mine = listing.children.filter((child) => parseEntryName(child)?.uuid === uuid).sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)))[0];
    if (mine === undefined) return undefined;
    const stat = await this.#retry(existsStart(this.#client, `${dir}/${mine}`));
    if (stat === null) return undefined;
    if (zkLong(stat.ephemeralOwner) !== this.#sessionId) {
      throw new BackendError(`znode ${dir}/${mine} carries our uuid but belongs to another session`);
    }
    zkCounters.adopted += 1;
    return this.#enqueued(queue, dir, uuid, `${dir}/${mine}`, listing.children, zkLong(listing.stat.czxid), inherited ?? zkLong(stat.czxid));
  }

  /** The entries of a listing; children baton did not create are left out, and reported. */
  #entriesFromListing(queue: string, dir: string, children: readonly string[], czxid: bigint, through?: Entry): Entry[] {
    const { entries, foreign } = this.#listings.parse(queue, dir, children, czxid, through === undefined ? Infinity : Number(through.order));
    if (foreign) this.#foreign.report(queue, foreignChildren(children).map((child) => `${dir}/${child}`));
    this.#sweepOrphans(dir, children);
    return entries;
  }

  /**
   * Deletes this session's orphans: children named with its uuid base that are no entry of its own.
   * One appears when a create whose reply was lost is applied only after the search for it (a member
   * that had not applied it yet answered the listing) and the enqueue created its entry again; left
   * alone, it would hold up everyone queued behind it, this session's own entry included, until the
   * session ended. No other session names a child with this base, so nothing else is touched.
   */
  #sweepOrphans(dir: string, children: readonly string[]): void {
    if (!this.#orphansPossible || this.#status !== 'open') return;
    for (const child of children) {
      if (!this.#uuids.owns(child)) continue;
      const path = `${dir}/${child}`;
      if (this.#mine.has(path) || this.#sweeping.has(path)) continue;
      const uuid = parseEntryName(child)?.uuid;
      if (uuid === undefined || (this.#creating.has(uuid) && this.#creating.get(uuid) === undefined)) continue;
      this.#sweeping.add(path);
      this.#send(removeStart(this.#client, path))
        .then(
          () => {
            zkCounters.orphansRemoved += 1;
          },
          () => undefined, // gone already, or seen again at the next listing
        )
        .finally(() => this.#sweeping.delete(path));
    }
  }

  /** @internal For tests: the directories found quiet, each with a watch of this session's on it. */
  get quietDirectories(): string[] {
    return [...this.#quiet.keys()];
  }

  /** @internal For tests: how many paths have local waiters for their deletion. */
  get waitedPaths(): number {
    return this.#waiters.size;
  }

  /** @internal For tests: whether listings are searched for this session's orphans (see `#orphansPossible`). */
  get searchesForOrphans(): boolean {
    return this.#orphansPossible;
  }

  /**
   * @internal For tests: creates a child named like an entry of this session that the session does not
   * know of, as a create applied after its lost reply was searched for would leave.
   */
  async createOrphan(queue: string, kind = 'lock'): Promise<string> {
    this.#orphansPossible = true; // as the lost reply of the create that left it would have
    await this.#retry(fromPromise(() => mkdirp(this.#client, this.dir(queue), this.#acl)));
    return this.#send(createStart(this.#client, entryPrefix(this.dir(queue), this.#uuids.next(), kind), zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL, undefined, this.#acl));
  }

  /** Ours from here on (before the listing is read, so that the orphan search passes over it). */
  #enqueued(queue: string, dir: string, uuid: string, path: string, children: readonly string[], czxid: bigint, token: bigint): Enqueued {
    this.#mine.add(path);
    this.#creating.set(uuid, path); // any other child with this uuid is a copy, to be swept
    const entries = this.#entriesFromListing(queue, dir, children, czxid);
    const entry = entries.find((e) => e.key === path);
    if (entry === undefined) {
      this.#mine.delete(path);
      throw new BackendError(`created ${path} but the listing of ${dir} does not show it`);
    }
    learnToken(entry, token);
    return { entry, queue: entries };
  }

  /** An entry of ours the server has answered is gone (our delete, or a delete that found it gone). */
  #gone(key: string): void {
    const dir = key.slice(0, key.lastIndexOf('/'));
    this.#mine.delete(key);
    this.#quiet.get(dir)?.mine.delete(key);
    if (trailingSequence(key) >= zkLimits.recycleFrom) this.#recycle(dir);
  }

  /**
   * ZooKeeper names a sequential child after its directory's count of creates, a signed 32-bit number:
   * after 2^31 - 1 creates the names turn negative, baton and Curator no longer order them as entries
   * (kazoo sorts them first), and the lock is unusable for good. So a directory whose count passed `zkLimits.recycleFrom` is deleted
   * whenever a delete of ours may have left it empty. The server refuses to delete a directory that
   * has children, so this takes nothing from anyone; an enqueue that finds the directory gone creates it
   * again (counting from 0), and its later creation zxid keeps fencing tokens increasing.
   */
  #recycle(dir: string): void {
    if (this.#status !== 'open') return;
    this.#send(removeStart(this.#client, dir)).then(
      () => (zkCounters.recycled += 1),
      () => undefined, // not empty (the usual answer), gone already, or the connection: the next delete tries again
    );
  }

  /** Whether an enqueue into `dir` may send its create without a listing. */
  #mayGoUnlisted(dir: string): boolean {
    const quiet = this.#quiet.get(dir);
    return quiet !== undefined && quiet.creates >= 0 && quiet.watched === this.#connection && quiet.mine.size === 0 && !this.#orphansPossible;
  }

  /**
   * Our new entry `path`, created without a listing, if its create's reply alone shows it to be the only
   * entry of its queue. ZooKeeper numbers a sequential child with the count of children its directory
   * had been given before it: deletes do not move that count, and a listing reports it within its
   * cversion (2 x creates - children). So a sequence equal to the count that the quiet listing implied
   * (plus our unlisted entries since) shows that nobody created a child since that listing; and every
   * entry there then was ours and has been deleted (each delete answered, so applied before this
   * create: replies come in the order the server processed the requests). That holds within one
   * incarnation of the directory (one removed and created again counts from zero): the watch on the
   * directory answers for that, since ZooKeeper sends the notification of its deletion ahead of the
   * reply to any later request on the same connection. A watch confirmed on an earlier connection
   * proves nothing (requests queued while disconnected are sent before the watches are set again).
   * Undefined when any of it does not hold: the caller then lists.
   */
  #aloneAfter(queue: string, dir: string, uuid: string, path: string, token: bigint): Enqueued | undefined {
    const quiet = this.#quiet.get(dir);
    const child = path.slice(dir.length + 1);
    if (quiet === undefined || quiet.creates < 0 || quiet.watched !== this.#connection || quiet.mine.size > 0 || this.#orphansPossible) return undefined;
    if (childSequence(child) !== quiet.creates) {
      // Someone else queued since: enqueues list again until a listing shows this session alone twice.
      zkCounters.unlistedMissed += 1;
      quiet.creates = -1;
      quiet.next = -1;
      return undefined;
    }
    quiet.creates += 1;
    quiet.next = quiet.creates;
    quiet.mine.add(path);
    this.#quiet.delete(dir);
    this.#quiet.set(dir, quiet); // most recent last
    zkCounters.unlisted += 1;
    return this.#enqueued(queue, dir, uuid, path, [child], quiet.czxid, token);
  }

  /**
   * After the listing that came with our new entry `path`: the directory is quiet if that entry is its
   * only entry and it was given no child after ours (the listing's count of creates, checked against
   * our sequence: the arithmetic of `#aloneAfter` checked too). Its enqueues go unlisted only once it is
   * found quiet with nobody else's create since this session's previous one (so not while two sessions
   * take turns), and once its watch is set (a request, made once per directory and connection).
   */
  #noteQuiet(dir: string, path: string, listed: { children: string[]; stat: ZkStat }, entries: readonly Entry[]): void {
    const creates = (listed.stat.cversion + listed.children.length) / 2;
    const sequence = childSequence(path.slice(dir.length + 1));
    const quiet = this.#quiet.get(dir);
    if (entries.length !== 1 || entries[0]!.key !== path || creates !== sequence + 1) {
      if (quiet !== undefined) quiet.creates = -1; // busy: its watch stays, for when it is quiet again
      return;
    }
    const czxid = zkLong(listed.stat.czxid);
    if (quiet === undefined) {
      if (!canDropDataWatchers(this.#client)) return; // its watch could not be let go of again
      const watcher = (): void => {
        // Removed, or its data changed: unknown from here on (the client has dropped the fired watch).
        if (this.#quiet.get(dir)?.watcher === watcher) this.#quiet.delete(dir);
      };
      this.#quiet.set(dir, { czxid, creates: -1, next: creates, arming: false, mine: new Set([path]), watched: -1, watcher });
      if (this.#quiet.size > QUIET_DIRECTORIES) this.#forgetQuiet(this.#quiet.keys().next().value!);
      return;
    }
    this.#quiet.delete(dir);
    this.#quiet.set(dir, quiet); // most recent last
    if (quiet.czxid !== czxid) {
      quiet.czxid = czxid;
      quiet.watched = -1;
      quiet.next = -1;
    }
    const alone = sequence === quiet.next;
    quiet.creates = alone ? creates : -1;
    quiet.next = creates;
    quiet.mine.clear();
    quiet.mine.add(path);
    if (alone && quiet.watched !== this.#connection) this.#watchQuiet(dir, quiet);
  }

  /** Sets the directory's watch; it counts from its reply on, if the directory is the incarnation found quiet. */
  #watchQuiet(dir: string, quiet: Quiet): void {
    if (quiet.arming) return;
    quiet.arming = true;
    const settled = (): boolean => {
      quiet.arming = false;
      if (this.#quiet.get(dir) === quiet) return true;
      // Forgotten meanwhile (its watch fired, or it was the least recently used): nothing to keep.
      dropDataWatcher(this.#client, dir, quiet.watcher);
      return false;
    };
    this.#send(watchStatStart(this.#client, dir, quiet.watcher)).then(
      (stat) => {
        if (!settled()) return;
        if (stat !== null && zkLong(stat.czxid) === quiet.czxid) quiet.watched = this.#connection;
        else quiet.creates = -1; // another incarnation: quiet again only after listings of that one
      },
      () => void settled(), // not set: the next listing that finds the directory quiet sets it again
    );
  }

  /**
   * Forgets a directory (the least recently used, past `QUIET_DIRECTORIES`), and lets go of its watch
   * in the client. The server keeps its copy until the directory changes or the connection ends.
   */
  #forgetQuiet(dir: string): void {
    const quiet = this.#quiet.get(dir);
    if (quiet === undefined) return;
    this.#quiet.delete(dir);
    dropDataWatcher(this.#client, dir, quiet.watcher);
  }

  /**
   * Sets one server watch per watched path, shared by every local waiter on that path. The watcher
   * function is kept per path, so that arming again (after a reconnect) registers nothing twice: the
   * client keeps one copy of a function per path, the server one watch per path and session.
   */
  #arm(path: string): void {
    let onEvent = this.#watchers.get(path);
    if (onEvent === undefined) {
      const watcher = (event: zookeeper.Event): void => {
        zkCounters.notifications += 1;
        if (this.#watchers.get(path) === watcher) this.#watchers.delete(path); // the client fires a watcher once
        if (event.getType() === zookeeper.Event.NODE_DELETED) this.#wake(path);
        else if (this.#waiters.has(path)) this.#arm(path);
      };
      this.#watchers.set(path, (onEvent = watcher));
    }
    const watcher = onEvent;
    this.#retry(watchDataStart(this.#client, path, watcher)).then(
      (present) => {
        if (!present) this.#wake(path);
      },
      (error: unknown) => this.#failPath(path, error),
    );
  }

  /**
   * After a reconnect the client re-registers its watches (SetWatches from the last zxid it saw, so a
   * delete in between fires). That is not taken on trust: every watched path is read again with its
   * watch, which wakes the waiters of a node that is gone and leaves a watch on one that is not.
   */
  #recheckWatches(): void {
    for (const path of this.#waiters.keys()) this.#arm(path);
    // A directory's waiters list again themselves: they are woken (no change is missed that way).
    for (const dir of [...this.#dirWaiters.keys()]) this.#wakeDir(dir);
  }

  #wake(path: string): void {
    settleWaiters(this.#waiters, path);
  }

  #failPath(path: string, error: unknown): void {
    settleWaiters(this.#waiters, path, { error });
  }

  #failWaiters(error: unknown): void {
    for (const path of [...this.#waiters.keys()]) this.#failPath(path, error);
    for (const dir of [...this.#dirWaiters.keys()]) this.#failDir(dir, error);
  }

  /**
   * Retries a request that failed only because the connection dropped (the client queues it until it
   * has reconnected); any other failure is mapped onto the recipes' errors, keeping the code in `cause`.
   */
  #retry<T>(request: Start<T>): Promise<T> {
    if (this.#status !== 'open') return this.#retryAfter(request, 0); // throws the session's end
    // The first attempt without an async frame or a `.then` of its own: most requests need no other.
    return this.#send(request, (error) => {
      if (!retriable(error)) throw this.#map(error);
      return backoff(0).then(() => this.#retryAfter(request, 1));
    });
  }

  async #retryAfter<T>(request: Start<T>, from: number): Promise<T> {
    for (let attempt = from; ; attempt += 1) {
      this.#assertOpen();
      try {
        return await this.#send(request);
      } catch (error) {
        if (!retriable(error)) throw this.#map(error);
        await backoff(attempt);
      }
    }
  }

  #onState(state: zookeeper.State): void {
    this.#connection += 1;
    if (this.#status !== 'open') return;
    if (state === zookeeper.State.SYNC_CONNECTED) {
      // The member re-validated the session with the leader before it answered the connect request:
      // as good as a heartbeat sent when that request was (see `#ping`).
      this.#touchedAt = Math.max(this.#touchedAt, this.#connectingAt);
      if (this.#suspended) this.#recheckWatches();
      this.#suspended = false;
      this.#events?.status('connected');
    } else if (state === zookeeper.State.DISCONNECTED) {
      this.#suspended = true;
      this.#events?.status('suspended');
    }
    else if (state === zookeeper.State.EXPIRED || state === zookeeper.State.AUTH_FAILED) {
      this.#lose(new SessionLostError(`ZooKeeper session 0x${this.id} ${state === zookeeper.State.EXPIRED ? 'expired' : 'failed authentication'}`));
    }
  }

  /**
   * Every failed request passes here before its caller sees the error. A reply saying the session is
   * gone (SESSION_EXPIRED, or UNKNOWN_SESSION once the server has removed it) can arrive while the
   * connection still stands, before the client reports the session expired: the session is lost from
   * that moment, so that no caller is told of the loss while the session still looks alive.
   */
  #onRequestFailed(error: unknown): void {
    if (this.#status === 'open' && sessionGone(error)) this.#lose(this.#expired(error));
  }

  /**
   * The session is gone: expired, or its authentication failed (the client's state says so), or a
   * reply said so. Closing the client may send a closeSession the server answers UNKNOWN_SESSION, a
   * code node-zookeeper-client would throw on without the guard in `client.ts`.
   */
  #lose(reason: SessionLostError): void {
    if (this.#status !== 'open') return;
    this.#end('lost', reason);
    this.#hangUp();
    this.#events?.status('lost', reason);
  }

  /**
   * Closes the client of a lost session. The connection may still stand (the loss came in a reply), so
   * the server is asked to close it; if it has not hung up within a third of the session timeout (2 s
   * at most: a generous round trip), the socket is destroyed, so that no open socket keeps the process
   * alive.
   */
  #hangUp(): void {
    const timer = setTimeout(() => destroySocket(this.#client), Math.min(this.timeoutMs / 3, 2_000));
    timer.unref();
    this.#client.once('disconnected', () => clearTimeout(timer));
    this.#client.close();
  }

  #expired(cause?: unknown): SessionLostError {
    return new SessionLostError(`ZooKeeper session 0x${this.id} expired`, cause === undefined ? undefined : { cause });
  }

  #assertOpen(): void {
    if (this.#status === 'lost') throw this.#expired();
    if (this.#status === 'closed') throw new ClosedError();
  }

  #map(error: unknown): Error {
    if (sessionGone(error)) return this.#expired(error);
    if (retriable(error) && this.#status === 'closed') return new ClosedError();
    if (isCode(error, ZkCode.NO_AUTH)) {
      return new AccessDeniedError(`ZooKeeper refused the request (NoAuth): this session's credentials do not grant it under ${this.#namespace}`, { cause: error });
    }
    if (error instanceof BatonError) return error;
    return new BackendError('ZooKeeper request failed', { cause: error });
  }
}

/**
 * Waits for the first connection. On abort the caller is told at once, and the client is left to finish
 * its attempt: closed as soon as it connects (its new session with it), or at the connect timeout.
 * Tearing down a client in the middle of dialling is not safe in node-zookeeper-client (its close
 * writes to a socket that may not exist yet).
 */
function connected(client: ZkClient, options: ZkDriverOptions): Promise<void> {
  const { signal } = options;
  return new Promise((resolve, reject) => {
    let abandoned = false;
    const lastError = rememberSocketErrors(client);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      client.removeListener('connected', onConnected);
      client.close();
      destroySocket(client); // close() only queues a request, which a server that never answered never reads
      const why = describeDialFailure(lastError(), options.connectTimeoutMs);
      if (!abandoned) reject(new BackendError(`could not connect to ZooKeeper at ${options.hosts} within ${options.connectTimeoutMs} ms: ${why}`, { cause: lastError() }));
    }, options.connectTimeoutMs);
    const onAbort = (): void => {
      abandoned = true;
      reject(signal!.reason);
    };
    const onConnected = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (abandoned) client.close();
      else resolve();
    };
    client.once('connected', onConnected);
    signal?.addEventListener('abort', onAbort, { once: true });
    client.connect();
  });
}

/** The server says the session no longer exists. */
function sessionGone(error: unknown): boolean {
  return isCode(error, ZkCode.SESSION_EXPIRED, ZkServerCode.UNKNOWN_SESSION);
}

/**
 * The request did not complete on this connection and may be sent again once the client has
 * (re)connected. (A request on a connection the session has moved away from is not answered
 * SESSION_MOVED: ZooKeeper closes that connection instead, which the client reports as a loss.)
 */
function retriable(error: unknown): boolean {
  return isCode(error, ZkCode.CONNECTION_LOSS);
}

/** The 10-digit sequence suffix of one of our entries' paths. */
function sequenceOf(entry: Entry): string {
  return entry.key.slice(-10);
}

/**
 * Ends the client's socket at once. node-zookeeper-client's close() waits for the server to hang up,
 * which a server that stopped answering never does; the open socket would keep the process alive.
 */
function destroySocket(client: ZkClient): void {
  const manager = (client as unknown as { connectionManager?: { socket?: { destroy(): void }; connectTimeoutHandler?: NodeJS.Timeout } }).connectionManager;
  manager?.socket?.destroy();
  // The timer of a dial that never connected: pending, it would keep the process alive a session timeout.
  clearTimeout(manager?.connectTimeoutHandler);
}

/**
 * On this client only (see jute.ts, replies.ts, direct.ts): baton reads its replies, with its compiled
 * records, and hands its hot requests straight to its connection manager. A client of another release
 * keeps its own reader and methods.
 */
function useCompiledRecords(client: ZkClient): void {
  const records = compiledRecords();
  if (records !== undefined && readRepliesWith(client, records)) sendDirectly(client, records);
}

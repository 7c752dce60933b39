import zookeeper from 'node-zookeeper-client';

import type { Abortable, Enqueued, Entry, GiveUp, GuardedOp } from '../../../recipes/contract.js';
import { SessionLostError } from '../../../recipes/errors.js';
import type { Driver, DriverEvents, EntryInfo } from '../../driver-port.js';
import { DriverCore } from '../core.js';
import { fromPromise, type Start } from '../requests.js';
import {
  aclFor,
  existsStart,
  getChildrenStart,
  getDataStat,
  isCode,
  removeStart,
  type ZkClient,
  ZkCode,
  zkLong,
} from './client.js';
import { destroySocket, hangUp } from './client/instance.js';
import { requestPreparer } from './client/pipeline.js';
import { Enqueuer } from './enqueue.js';
import { zkFailures } from './failures.js';
import { foreignChildren } from './foreign-children.js';
import { zkGuardedRead, zkGuardedWrite } from './guarded.js';
import { KeepAlive } from './keepalive.js';
import { mkdirp } from './mkdirp.js';
import { learnToken, ListingParser, parseEntryName, ZK_DIALECTS } from './names.js';
import { openClient, type ZkDriverOptions } from './open.js';
import { OwnEntries, RECYCLE_FROM } from './own-entries.js';
import { type ZkCounters, zkCounters, type ZkProbe, type ZkView } from './probe.js';
import { QuietDirectories } from './quiet.js';
import { revokeStart } from './revoke.js';
import { Watches } from './watches.js';

export type { ZkDriverOptions } from './open.js';

/**
 * The ZooKeeper backend on node-zookeeper-client: one client (one ZooKeeper session) per driver. This
 * file holds the contract's requests and the client's state changes; the rest is in the files beside
 * it (the enqueue's create and listing, heartbeat, watches, quiet directories, own entries and orphans,
 * the request pipeline).
 */
export class ZkDriver implements Driver {
  readonly dialects = ZK_DIALECTS;
  readonly id: string;
  readonly timeoutMs: number;
  readonly openedAt: number;
  readonly #client: ZkClient;
  readonly #namespace: string;
  readonly #acl: zookeeper.ACL[];
  readonly #sessionId: bigint;
  readonly #core: DriverCore;
  /** Before each request: ids that cannot overflow, and the cork when others are in flight. */
  readonly #prepare: () => void;
  readonly #counters: ZkCounters;
  readonly #probe: ZkProbe | undefined;
  #suspended = false;
  readonly #listings = new ListingParser();
  readonly #keepAlive: KeepAlive;
  readonly #watches: Watches;
  readonly #quiet: QuietDirectories;
  readonly #own: OwnEntries;
  readonly #enqueuer: Enqueuer;

  static async open(options: ZkDriverOptions, probe?: ZkProbe): Promise<ZkDriver> {
    const { client, openedAt } = await openClient(options);
    return new ZkDriver(client, options, openedAt, probe);
  }

  private constructor(client: ZkClient, options: ZkDriverOptions, openedAt: number, probe: ZkProbe | undefined) {
    this.openedAt = openedAt;
    this.#client = client;
    this.#namespace = options.namespace;
    this.#acl = aclFor(options.acl ?? 'open');
    this.#sessionId = zkLong(client.getSessionId());
    this.id = this.#sessionId.toString(16).padStart(16, '0');
    this.timeoutMs = client.getSessionTimeout();
    this.#probe = probe;
    this.#counters = probe?.counters ?? zkCounters();
    this.#prepare = requestPreparer(client, () => this.#core.inFlight);
    this.#core = new DriverCore(
      zkFailures(this.id, this.#namespace, () => this.#core.status),
      {
        onEnd: (reason) => {
          this.#keepAlive.stop();
          this.#watches.failAll(reason);
        },
        onLost: () => hangUp(client, this.timeoutMs),
      },
      this.#prepare,
    );
    const send = <T>(request: Start<T>): Promise<T> => this.#core.send(request);
    const retry = <T>(request: Start<T>): Promise<T> => this.#core.retry(request);
    const isOpen = (): boolean => this.#core.isOpen;
    const counters = this.#counters;
    this.#watches = new Watches({
      client,
      retry,
      entriesOf: (queue, dir, children, czxid) => this.#parseAndSweep(queue, dir, children, czxid),
      notified: () => (counters.notifications += 1),
    });
    this.#quiet = new QuietDirectories({ client, counters, send });
    const driver = this;
    this.#own = new OwnEntries({
      client,
      acl: this.#acl,
      sessionId: this.#sessionId,
      counters,
      get recycleFrom() {
        return driver.#probe?.recycleFrom ?? RECYCLE_FROM;
      },
      get afterMkdirpLook() {
        return driver.#probe?.afterMkdirpLook;
      },
      isOpen,
      send,
      retry,
    });
    this.#enqueuer = new Enqueuer({
      client,
      acl: this.#acl,
      get afterMkdirpLook() {
        return driver.#probe?.afterMkdirpLook;
      },
      core: this.#core,
      counters: this.#counters,
      own: this.#own,
      quiet: this.#quiet,
      prepare: this.#prepare,
      dir: (queue) => this.#dir(queue),
      remove: (key) => this.#remove(key),
      parseAndSweep: (queue, dir, children, czxid) => this.#parseAndSweep(queue, dir, children, czxid),
    });
    client.on('state', (state) => this.#onState(state));
    this.#keepAlive = new KeepAlive(client, this.timeoutMs, openedAt, {
      isOpen,
      isSuspended: () => this.#suspended,
      send,
      busy: () => this.#core.events?.busy?.() ?? false,
      ack: (credit) => this.#core.events?.ack(credit),
    });
    probe?.expose(this.#view());
  }

  attach(events: DriverEvents): void {
    this.#core.attach(events);
    if (events.deadlineMarginMs !== undefined) this.#keepAlive.setMargin(events.deadlineMarginMs);
  }

  abandon(reason: Error): void {
    this.#core.abandon(reason, () => {
      this.#client.close();
      // The server stopped answering, so it will not close the connection either.
      destroySocket(this.#client);
    });
  }

  /** The directory that holds a queue's entries. */
  #dir(queue: string): string {
    return `${this.#namespace}/${queue}`;
  }

  enqueue(
    queue: string,
    kind: string,
    at?: Entry,
    data?: string,
    dialect?: string,
    giveUp?: GiveUp,
  ): Promise<Enqueued> {
    return this.#enqueuer.enqueue(queue, kind, at, data, dialect, giveUp);
  }

  list(queue: string, through?: Entry): Promise<readonly Entry[]> {
    const dir = this.#dir(queue);
    const listing = getChildrenStart(this.#client, dir);
    // Parsed as the answer arrives, so that the caller's promise is settled by the request itself (a
    // woken waiter lists on the handoff's critical path).
    const parsed: Start<readonly Entry[]> = (done) =>
      listing((error, listed) => {
        if (error) return isCode(error, ZkCode.NO_NODE) ? done(null, []) : done(error);
        let entries: Entry[];
        try {
          entries = this.#parseAndSweep(queue, dir, listed!.children, zkLong(listed!.stat.czxid), through);
        } catch (failure) {
          return done(failure);
        }
        done(null, entries);
      });
    return this.#core.retry(parsed);
  }

  /**
   * The entries of a listing, and two things done on the way: children baton did not create are
   * reported (once each), and this session's orphans among them are deleted (see `OwnEntries.sweepOrphans`).
   */
  #parseAndSweep(queue: string, dir: string, children: readonly string[], czxid: bigint, through?: Entry): Entry[] {
    const { entries, foreign } = this.#listings.parse(
      queue,
      dir,
      children,
      czxid,
      through === undefined ? Infinity : Number(through.order),
    );
    if (foreign)
      this.#core.foreign.report(
        queue,
        foreignChildren(children).map((child) => `${dir}/${child}`),
      );
    this.#own.sweepOrphans(dir, children);
    return entries;
  }

  waitGone(entry: Entry, signal: Abortable): Promise<void> {
    return this.#watches.waitGone(entry, signal);
  }

  waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    return this.#watches.waitChange(queue, this.#dir(queue), seen, signal);
  }

  withdraw(entry: Entry): Promise<void> {
    return this.#remove(entry.key);
  }

  /** Deletes an entry of ours until it is gone or the session is; NoAuth (an ACL changed) is thrown (see `DriverCore.withdraw`). */
  #remove(key: string): Promise<void> {
    return this.#core.withdraw({
      key,
      attempt: () => removeStart(this.#client, key),
      done: () => this.#entryGone(key),
      gone: (error) => isCode(error, ZkCode.NO_NODE),
    });
  }

  /** An entry of ours the server has answered is gone (our delete, or a delete that found it gone). */
  #entryGone(key: string): void {
    const dir = key.slice(0, key.lastIndexOf('/'));
    this.#own.forget(key);
    this.#quiet.entryGone(dir, key);
    this.#own.recycleIfPastLimit(dir, key);
  }

  /** The entry's data; its fencing token is learned on the way (a listed entry's is not known until read). */
  async read(entry: Entry): Promise<string | null> {
    const node = await this.#core.retry(fromPromise(() => getDataStat(this.#client, entry.key)));
    if (node === null) return null;
    learnToken(entry, zkLong(node.stat.czxid));
    return node.data.toString();
  }

  async describe(queue: string): Promise<EntryInfo[]> {
    const entries = await this.list(queue);
    // Sent together: one round trip for the whole queue. An entry gone meanwhile is left out.
    const found = await Promise.all(
      entries.map((entry) => this.#core.retry(fromPromise(() => getDataStat(this.#client, entry.key)))),
    );
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
    const stat = await this.#core.retry(existsStart(this.#client, entry.key));
    return stat !== null && zkLong(stat.ephemeralOwner) === this.#sessionId;
  }

  close(): Promise<void> {
    return this.#core.close(this.timeoutMs, { onServer: (until) => this.#closeClient(until) });
  }

  /** Closes the client (the server ends the session), waits until the server hangs up or `until`, drops the socket. */
  async #closeClient(until: number): Promise<void> {
    const closed = new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, Math.max(0, until - Date.now()));
      this.#client.once('disconnected', () => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.#client.close();
    await closed;
    destroySocket(this.#client);
  }

  #onState(state: zookeeper.State): void {
    this.#quiet.stateChanged();
    if (!this.#core.isOpen) return;
    if (state === zookeeper.State.SYNC_CONNECTED) {
      this.#keepAlive.connected();
      if (this.#suspended) this.#watches.recheck();
      this.#suspended = false;
      this.#core.events?.status('connected');
    } else if (state === zookeeper.State.DISCONNECTED) {
      this.#suspended = true;
      this.#core.events?.status('suspended');
    } else if (state === zookeeper.State.EXPIRED || state === zookeeper.State.AUTH_FAILED) {
      this.#core.lose(
        new SessionLostError(
          `ZooKeeper session 0x${this.id} ${state === zookeeper.State.EXPIRED ? 'expired' : 'failed authentication'}`,
        ),
      );
    }
  }

  /** What `baton-locks/testing` may see and do (see `ZkView`). */
  #view(): ZkView {
    const driver = this;
    return {
      get connectingAt() {
        return driver.#keepAlive.connectingAt;
      },
      get heartbeatReachesLeader() {
        return driver.#keepAlive.reachesLeader;
      },
      get quietDirectories() {
        return driver.#quiet.directories;
      },
      get waitedPaths() {
        return driver.#watches.waitedPaths;
      },
      get searchesForOrphans() {
        return driver.#own.orphansPossible;
      },
      sessionCredentials: () => ({
        sessionId: this.#client.getSessionId(),
        sessionPassword: this.#client.getSessionPassword(),
      }),
      createOrphan: (queue, kind = 'lock') => this.#own.createOrphan(this.#dir(queue), kind),
    };
  }

  guardedWrite(entry: Entry, op: GuardedOp): Promise<boolean> {
    return zkGuardedWrite(
      {
        client: this.#client,
        namespace: this.#namespace,
        acl: this.#acl,
        send: (start) => this.#core.retry(start),
        mkdirp: (path) => this.#core.retry(fromPromise(() => mkdirp(this.#client, path, this.#acl))),
      },
      entry,
      op,
    );
  }

  guardedRead(queue: string, name: string): Promise<string | null> {
    return this.#core.retry(fromPromise(() => zkGuardedRead(this.#client, this.#namespace, queue, name)));
  }

  /** An operator's force release of any session's entry (see revoke.ts). */
  revoke(entry: Entry): Promise<boolean> {
    return this.#core.retry(revokeStart(this.#client, this.#dir(entry.queue), entry));
  }
}

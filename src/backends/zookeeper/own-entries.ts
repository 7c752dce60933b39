import zookeeper from 'node-zookeeper-client';

import { BackendError } from '../../../recipes/errors.js';
import { fromPromise, type Start } from '../requests.js';
import {
  createStart,
  existsStart,
  getChildrenStart,
  isCode,
  removeStart,
  type ZkClient,
  ZkCode,
  zkLong,
  type ZkStat,
} from './client.js';
import { mkdirp } from './mkdirp.js';
import { entryPrefix, hasNegativeSequence, parseEntryName, trailingSequence, UuidSequence } from './names.js';
import type { AfterLook, ZkCounters } from './probe.js';

/**
 * The sequence from which a queue directory is deleted once a delete of ours may have left it empty
 * (see `OwnEntries.#recycle`): half of the 2^31 that ZooKeeper can count to.
 */
export const RECYCLE_FROM = 2 ** 30;

/** What the session's own entries need of their driver. */
export interface OwnHost {
  readonly client: ZkClient;
  readonly acl: zookeeper.ACL[];
  readonly sessionId: bigint;
  readonly counters: ZkCounters;
  /** The sequence from which a directory is recycled (`RECYCLE_FROM` but in tests). */
  readonly recycleFrom: number;
  readonly afterMkdirpLook: AfterLook | undefined;
  isOpen(): boolean;
  /** Sends a request through the driver's pipeline, once. */
  send<T>(request: Start<T>): Promise<T>;
  /** Sends a request through the driver's pipeline, retried while only the connection failed. */
  retry<T>(request: Start<T>): Promise<T>;
}

/**
 * This session's own children: the entries it knows, the creates still running, and the rest, orphans
 * of creates whose replies were lost. Each session names its children with a uuid base of its own
 * (see names.ts), by which it finds a create whose reply was lost (adoption) and sweeps its orphans.
 * Also the recycling of directories whose sequence nears its end.
 */
export class OwnEntries {
  readonly #host: OwnHost;
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

  constructor(host: OwnHost) {
    this.#host = host;
  }

  get orphansPossible(): boolean {
    return this.#orphansPossible;
  }

  /** A create may have been applied without our knowing its name: listings are searched for orphans from now on. */
  orphansMayExist(): void {
    this.#orphansPossible = true;
  }

  /** The uuid base of the next entry's name. */
  nextUuid(): string {
    return this.#uuids.next();
  }

  /** An enqueue of `uuid` begins: a child carrying it may be its entry, not an orphan. */
  creating(uuid: string): void {
    this.#creating.set(uuid, undefined);
  }

  /** The enqueue of `uuid` has ended. */
  created(uuid: string): void {
    this.#creating.delete(uuid);
  }

  /** `path` is ours from here on, the enqueue of `uuid`'s entry (any other child with the uuid is a copy, to be swept). */
  claim(uuid: string, path: string): void {
    this.#mine.add(path);
    this.#creating.set(uuid, path);
  }

  /** `path` is no entry of ours after all (its listing did not show it). */
  disown(path: string): void {
    this.#mine.delete(path);
  }

  /** An entry of ours the server has answered is gone (our delete, or a delete that found it gone). */
  forget(key: string): void {
    this.#mine.delete(key);
  }

  /**
   * After a delete of ours in `dir`: the directory is recycled if the deleted entry's sequence passed the
   * limit, or wrapped (a negative sequence, whose last ten characters read -1 or at least 10^9).
   */
  recycleIfPastLimit(dir: string, deleted: string): void {
    const sequence = trailingSequence(deleted);
    if (
      sequence >= this.#host.recycleFrom ||
      ((sequence < 0 || sequence >= 1e9) && hasNegativeSequence(deleted.slice(dir.length + 1)))
    )
      this.#recycle(dir);
  }

  /** After a lost create reply: our child, if the create reached the server, carries our uuid. */
  async findOwn(
    dir: string,
    uuid: string,
  ): Promise<{ path: string; czxid: bigint; listing: { children: string[]; stat: ZkStat } } | undefined> {
    let listing: { children: string[]; stat: ZkStat };
    try {
      listing = await this.#host.retry(getChildrenStart(this.#host.client, dir));
    } catch (error) {
      if (isCode(error, ZkCode.NO_NODE)) return undefined; // no directory, so the create cannot have happened
      throw error;
    }
    // Two attempts may both have been applied: the earlier place is ours, the copy is swept as an orphan.
    const mine = listing.children
      .filter((child) => parseEntryName(child)?.uuid === uuid)
      .sort((a, b) => a.slice(-10).localeCompare(b.slice(-10)))[0];
    if (mine === undefined) return undefined;
    const stat = await this.#host.retry(existsStart(this.#host.client, `${dir}/${mine}`));
    if (stat === null) return undefined;
    if (zkLong(stat.ephemeralOwner) !== this.#host.sessionId) {
      throw new BackendError(`znode ${dir}/${mine} carries our uuid but belongs to another session`);
    }
    this.#host.counters.adopted += 1;
    return { path: `${dir}/${mine}`, czxid: zkLong(stat.czxid), listing };
  }

  /**
   * Deletes this session's orphans among a listing's children: children named with its uuid base that
   * are no entry of its own. One appears when a create whose reply was lost is applied only after the
   * search for it (a member that had not applied it yet answered the listing) and the enqueue created
   * its entry again; left alone, it would hold up everyone queued behind it, this session's own entry
   * included, until the session ended. No other session names a child with this base, so nothing else
   * is touched.
   */
  sweepOrphans(dir: string, children: readonly string[]): void {
    if (!this.#orphansPossible || !this.#host.isOpen()) return;
    for (const child of children) {
      if (!this.#uuids.owns(child)) continue;
      const path = `${dir}/${child}`;
      if (this.#mine.has(path) || this.#sweeping.has(path)) continue;
      const uuid = parseEntryName(child)?.uuid;
      if (uuid === undefined || (this.#creating.has(uuid) && this.#creating.get(uuid) === undefined)) continue;
      this.#sweeping.add(path);
      this.#host
        .send(removeStart(this.#host.client, path))
        .then(
          () => {
            this.#host.counters.orphansRemoved += 1;
          },
          () => undefined, // gone already, or seen again at the next listing
        )
        .finally(() => this.#sweeping.delete(path));
    }
  }

  /** @internal For tests (through the probe): a child named like an entry of this session that it does not know of, as a create applied after its lost reply was searched for would leave. */
  async createOrphan(dir: string, kind: string): Promise<string> {
    this.#orphansPossible = true; // as the lost reply of the create that left it would have
    await this.#host.retry(
      fromPromise(() => mkdirp(this.#host.client, dir, this.#host.acl, this.#host.afterMkdirpLook)),
    );
    return this.#host.send(
      createStart(
        this.#host.client,
        entryPrefix(dir, this.#uuids.next(), kind),
        zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
        undefined,
        this.#host.acl,
      ),
    );
  }

  /**
   * ZooKeeper names a sequential child after its directory's count of creates, a signed 32-bit number:
   * past 2^31 - 1 the names turn negative, no order agrees with the peers' (they sort them as text,
   * first), and baton refuses the lock (`hasNegativeSequence`) until the directory is renewed. So a
   * directory whose count passed the limit is deleted whenever a delete of ours may have left it empty.
   * The server refuses to delete a directory that has children, so this takes nothing from anyone; an
   * enqueue that finds the directory gone creates it again (counting from 0), and its later creation
   * zxid keeps fencing tokens increasing.
   */
  #recycle(dir: string): void {
    if (!this.#host.isOpen()) return;
    this.#host.send(removeStart(this.#host.client, dir)).then(
      () => (this.#host.counters.recycled += 1),
      () => undefined, // not empty (the usual answer), gone already, or the connection: the next delete tries again
    );
  }
}

import type zookeeper from 'node-zookeeper-client';

import { BoundedMap } from '../../../recipes/bounded-map.js';
import type { Entry } from '../../../recipes/contract.js';
import type { Start } from '../requests.js';
import { watchStatStart, type ZkClient, zkLong, type ZkStat } from './client.js';
import { canDropDataWatchers, dropDataWatcher } from './client/instance.js';
import { sequenceOf as childSequence } from './names.js';
import type { ZkCounters } from './probe.js';

/** How many directories found quiet a session keeps (and keeps a watch on), the most recently used. */
const QUIET_DIRECTORIES = 64;

/**
 * A queue directory in which this session found no entry but its own, with what it takes to prove from
 * a create's reply alone that the entry it creates there next is again the only one (see
 * `QuietDirectories.aloneAfter`). Only within one incarnation of the directory, which a watch on it
 * stands for. Kept while the watch stands (a 3.4 client cannot remove it), also when the directory is
 * busy again.
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

/** What the quiet directories need of their driver. */
export interface QuietHost {
  readonly client: ZkClient;
  readonly counters: ZkCounters;
  /** Sends a request through the driver's pipeline, once. */
  send<T>(request: Start<T>): Promise<T>;
}

/**
 * The uncontended enqueue's shortcut: in a directory where this session keeps finding itself alone,
 * the create goes without its listing, and the create's reply alone shows the entry to be the only one.
 */
export class QuietDirectories {
  readonly #host: QuietHost;
  /**
   * Directories found quiet, the most recently used last (see `Quiet`); the least recently used is
   * forgotten past `QUIET_DIRECTORIES` and its watch let go of in the client (the server keeps its
   * copy until the directory changes or the connection ends).
   */
  readonly #quiet = new BoundedMap<string, Quiet>(QUIET_DIRECTORIES, (dir, quiet) =>
    dropDataWatcher(this.#host.client, dir, quiet.watcher),
  );
  /** Counts the client's state changes: a watch confirmed on one connection says nothing of the time another was down. */
  #connection = 0;

  constructor(host: QuietHost) {
    this.#host = host;
  }

  /** The directories found quiet, each with a watch of this session's on it. */
  get directories(): string[] {
    return [...this.#quiet.keys()];
  }

  /** The client's state changed (a connection ended or began). */
  stateChanged(): void {
    this.#connection += 1;
  }

  /** Whether an enqueue into `dir` may send its create without a listing. */
  mayGoUnlisted(dir: string, orphansPossible: boolean): boolean {
    const quiet = this.#quiet.get(dir);
    return (
      quiet !== undefined &&
      quiet.creates >= 0 &&
      quiet.watched === this.#connection &&
      quiet.mine.size === 0 &&
      !orphansPossible
    );
  }

  /** An entry of ours in `dir` whose delete the server answered. */
  entryGone(dir: string, key: string): void {
    this.#quiet.get(dir)?.mine.delete(key);
  }

  /**
   * The listing that shows our new entry `path`, created without a listing, to be the only entry of its
   * queue, if its create's reply alone shows it. ZooKeeper numbers a sequential child with the count of
   * children its directory had been given before it: deletes do not move that count, and a listing
   * reports it within its cversion (2 x creates - children). So a sequence equal to the count that the
   * quiet listing implied (plus our unlisted entries since) shows that nobody created a child since
   * that listing; and every entry there then was ours and has been deleted (each delete answered, so
   * applied before this create: replies come in the order the server processed the requests). That
   * holds within one incarnation of the directory (one removed and created again counts from zero):
   * the watch on the directory answers for that, since ZooKeeper sends the notification of its
   * deletion ahead of the reply to any later request on the same connection. A watch confirmed on an
   * earlier connection proves nothing (requests queued while disconnected are sent before the watches
   * are set again). Undefined when any of it does not hold: the caller then lists.
   */
  aloneAfter(dir: string, path: string, orphansPossible: boolean): { children: string[]; czxid: bigint } | undefined {
    const quiet = this.#quiet.get(dir);
    const child = path.slice(dir.length + 1);
    if (
      quiet === undefined ||
      quiet.creates < 0 ||
      quiet.watched !== this.#connection ||
      quiet.mine.size > 0 ||
      orphansPossible
    )
      return undefined;
    if (childSequence(child) !== quiet.creates) {
      // Someone else queued since: enqueues list again until a listing shows this session alone twice.
      this.#host.counters.unlistedMissed += 1;
      quiet.creates = -1;
      quiet.next = -1;
      return undefined;
    }
    quiet.creates += 1;
    quiet.next = quiet.creates;
    quiet.mine.add(path);
    this.#quiet.touch(dir); // most recent last
    this.#host.counters.unlisted += 1;
    return { children: [child], czxid: quiet.czxid };
  }

  /**
   * After the listing that came with our new entry `path`: the directory is quiet if that entry is its
   * only entry and it was given no child after ours (the listing's count of creates, checked against
   * our sequence: the arithmetic of `aloneAfter` checked too). Its enqueues go unlisted only once it is
   * found quiet with nobody else's create since this session's previous one (so not while two sessions
   * take turns), and once its watch is set (a request, made once per directory and connection).
   */
  noteListing(
    dir: string,
    path: string,
    listed: { children: string[]; stat: ZkStat },
    entries: readonly Entry[],
  ): void {
    const creates = (listed.stat.cversion + listed.children.length) / 2;
    const sequence = childSequence(path.slice(dir.length + 1));
    const quiet = this.#quiet.get(dir);
    if (entries.length !== 1 || entries[0]!.key !== path || creates !== sequence + 1) {
      if (quiet !== undefined) quiet.creates = -1; // busy: its watch stays, for when it is quiet again
      return;
    }
    const czxid = zkLong(listed.stat.czxid);
    if (quiet === undefined) {
      if (!canDropDataWatchers(this.#host.client)) return; // its watch could not be let go of again
      const watcher = (): void => {
        // Removed, or its data changed: unknown from here on (the client has dropped the fired watch).
        if (this.#quiet.get(dir)?.watcher === watcher) this.#quiet.delete(dir);
      };
      this.#quiet.set(dir, {
        czxid,
        creates: -1,
        next: creates,
        arming: false,
        mine: new Set([path]),
        watched: -1,
        watcher,
      });
      return;
    }
    this.#quiet.touch(dir); // most recent last
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
    if (alone && quiet.watched !== this.#connection) this.#watch(dir, quiet);
  }

  /** Sets the directory's watch; it counts from its reply on, if the directory is the incarnation found quiet. */
  #watch(dir: string, quiet: Quiet): void {
    if (quiet.arming) return;
    quiet.arming = true;
    const settled = (): boolean => {
      quiet.arming = false;
      if (this.#quiet.get(dir) === quiet) return true;
      // Forgotten meanwhile (its watch fired, or it was the least recently used): nothing to keep.
      dropDataWatcher(this.#host.client, dir, quiet.watcher);
      return false;
    };
    this.#host.send(watchStatStart(this.#host.client, dir, quiet.watcher)).then(
      (stat) => {
        if (!settled()) return;
        if (stat !== null && zkLong(stat.czxid) === quiet.czxid) quiet.watched = this.#connection;
        else quiet.creates = -1; // another incarnation: quiet again only after listings of that one
      },
      () => void settled(), // not set: the next listing that finds the directory quiet sets it again
    );
  }
}

import zookeeper from 'node-zookeeper-client';

import type { Enqueued, Entry, GiveUp } from '../../../recipes/contract.js';
import { BackendError, InvalidArgumentError } from '../../../recipes/errors.js';
import { backoff } from '../../backoff.js';
import type { DriverCore } from '../core.js';
import { EnqueueSlots } from '../enqueue-slots.js';
import { fromPromise } from '../requests.js';
import { createEntryStart, getChildrenStart, isCode, ZkCode, zkCode, zkLong, type ZkStat } from './client.js';
import { corked } from './client/pipeline.js';
import { retriable } from './failures.js';
import { mkdirp } from './mkdirp.js';
import { entryPrefix, learnToken, uuidKey, ZK_DIALECTS, type ZkDialect } from './names.js';
import type { OwnEntries, OwnHost } from './own-entries.js';
import type { ZkCounters } from './probe.js';
import type { QuietDirectories } from './quiet.js';

const MAX_PARENT_RETRIES = 10;

/** What the enqueue needs of its driver: its client, the ACL of what it creates, and the driver's queue reads. */
export interface EnqueuerHost extends Pick<OwnHost, 'client' | 'acl' | 'afterMkdirpLook'> {
  readonly core: DriverCore;
  readonly counters: ZkCounters;
  readonly own: OwnEntries;
  readonly quiet: QuietDirectories;
  /** Before each request: ids that cannot overflow, and the cork when others are in flight. */
  prepare(): void;
  /** The directory that holds a queue's entries. */
  dir(queue: string): string;
  /** Deletes an entry of ours until it is gone or the session is (the driver's withdraw). */
  remove(key: string): Promise<void>;
  /** The entries of a listing, with foreign children reported and our orphans among them deleted. */
  parseAndSweep(queue: string, dir: string, children: readonly string[], czxid: bigint): Entry[];
}

/**
 * The enqueue: the create and the listing sent in one write (the create alone in a quiet directory),
 * the queue's directory made when missing, the adoption of a create whose reply was lost, and the
 * delete of an entry whose enqueue failed after its create.
 */
export class Enqueuer {
  readonly #host: EnqueuerHost;
  readonly #slots: EnqueueSlots;

  constructor(host: EnqueuerHost) {
    this.#host = host;
    this.#slots = new EnqueueSlots(host.counters);
  }

  /**
   * An enqueue, once the session has a place in flight for it (see `EnqueueSlots`); one put `at` an
   * entry of ours (a downgrade, a semaphore's announced grant) goes at once: a holder waits for it.
   */
  enqueue(
    queue: string,
    kind: string,
    at?: Entry,
    data?: string,
    dialect?: string,
    giveUp?: GiveUp,
  ): Promise<Enqueued> {
    // Refused before any wait for a place in flight.
    if (dialect !== undefined && !(ZK_DIALECTS as readonly string[]).includes(dialect))
      return Promise.reject(new InvalidArgumentError('interop', dialect, `one of ${ZK_DIALECTS.join(', ')}`));
    if (at !== undefined) return this.#enqueue(queue, kind, at, data, dialect);
    return this.#slots.run(() => this.#enqueue(queue, kind, at, data, dialect), giveUp);
  }

  async #enqueue(queue: string, kind: string, at?: Entry, data?: string, dialect?: string): Promise<Enqueued> {
    const host = this.#host;
    const { client, core, own, quiet, acl } = host;
    const uuid = own.nextUuid();
    const id = uuidKey(uuid);
    const dir = host.dir(queue);
    const payload = data === undefined ? undefined : Buffer.from(data);
    // Placed `at` another entry: not sequential, but named with that entry's sequence so it sorts there.
    const prefix = entryPrefix(dir, uuid, kind, dialect as ZkDialect | undefined);
    const path = at === undefined ? prefix : `${prefix}${sequenceOf(at)}`;
    const mode = at === undefined ? zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL : zookeeper.CreateMode.EPHEMERAL;
    // An entry put at another's place (a downgraded read, a semaphore's announced grant) keeps that
    // entry's token: it goes on with the same hold.
    const inherited = at?.fencingToken;
    own.creating(id);
    try {
      for (let attempt = 0; ; attempt += 1) {
        core.assertOpen();
        // Sent back to back in one write: the server processes the listing after the create, so it shows
        // it. With other requests in flight, that write waits for the end of the turn too (see
        // `requestPreparer`). In a directory found quiet the create goes alone, and the listing only if
        // its reply cannot show our entry alone (`QuietDirectories.aloneAfter`).
        host.prepare();
        let creating: Promise<{ path: string; czxid: bigint }>;
        let listing: Promise<{ children: string[]; stat: ZkStat }> | undefined;
        if (at === undefined && attempt === 0 && quiet.mayGoUnlisted(dir, own.orphansPossible)) {
          creating = core.sendPrepared(createEntryStart(client, path, mode, payload, acl));
        } else {
          [creating, listing] = corked(
            client,
            () =>
              [
                core.sendPrepared(createEntryStart(client, path, mode, payload, acl)),
                core.sendPrepared(getChildrenStart(client, dir)),
              ] as const,
          );
          // Read only once the create succeeded; until then its failure must not go unhandled.
          listing.catch(() => undefined);
        }
        let created: string;
        let token: bigint;
        try {
          ({ path: created, czxid: token } = await creating);
          token = inherited ?? token;
        } catch (error) {
          if (!isCode(error, ZkCode.NO_NODE)) own.orphansMayExist(); // a lost reply may hide a create
          if (isCode(error, ZkCode.NO_NODE) && attempt < MAX_PARENT_RETRIES) {
            await core.retry(fromPromise(() => mkdirp(client, dir, acl, host.afterMkdirpLook)));
            continue;
          }
          if (!retriable(error)) {
            // No server code (an unreadable reply): the create may have been applied, so ours goes if it was.
            if (zkCode(error) === undefined) await this.#dropIfCreated(dir, id);
            throw core.mapFailure(error);
          }
          const adopted = await own.findOwn(dir, id);
          if (adopted !== undefined)
            return this.#enqueued(
              queue,
              dir,
              id,
              adopted.path,
              adopted.listing.children,
              zkLong(adopted.listing.stat.czxid),
              inherited ?? adopted.czxid,
            );
          await backoff(attempt);
          continue;
        }
        let listed: { children: string[]; stat: ZkStat } | undefined;
        if (listing === undefined) {
          const shown = quiet.aloneAfter(dir, created, own.orphansPossible);
          if (shown !== undefined) return this.#enqueued(queue, dir, id, created, shown.children, shown.czxid, token);
        } else {
          listed = await listing.catch(() => undefined);
        }
        listed ??= await core
          .retry(getChildrenStart(client, dir))
          .catch((error: unknown) => this.#dropCreated(created, error));
        const enqueued = this.#enqueued(queue, dir, id, created, listed.children, zkLong(listed.stat.czxid), token);
        if (at === undefined) quiet.noteListing(dir, created, listed, enqueued.queue);
        return enqueued;
      }
    } catch (error) {
      // The create may have been applied without our knowing its name (a lost reply, or a failure
      // after it): from now on, listings are searched for this session's orphans.
      own.orphansMayExist();
      throw error;
    } finally {
      own.created(id);
    }
  }

  /** After a create of unknown outcome that will not be retried: the entry it may have made is deleted. */
  async #dropIfCreated(dir: string, uuid: string): Promise<void> {
    const found = await this.#host.own.findOwn(dir, uuid).catch(() => undefined);
    if (found !== undefined) await this.#host.remove(found.path).catch(() => undefined);
  }

  /**
   * An enqueue that fails after its create succeeded: the entry is deleted (as a withdraw would, in the
   * background) rather than left to hold up the queue until a listing of this session's finds it.
   */
  #dropCreated(created: string, error: unknown): never {
    this.#host.remove(created).catch(() => undefined);
    throw error;
  }

  /**
   * Ours from here on (claimed before the listing is read, so that the orphan sweep passes over it);
   * deleted again if its listing fails it (refused, or not showing it).
   */
  #enqueued(
    queue: string,
    dir: string,
    uuid: string,
    path: string,
    children: readonly string[],
    czxid: bigint,
    token: bigint,
  ): Enqueued {
    this.#host.own.claim(uuid, path);
    let entries: Entry[];
    try {
      entries = this.#host.parseAndSweep(queue, dir, children, czxid);
    } catch (error) {
      return this.#dropCreated(path, error);
    }
    const entry = entries.find((e) => e.key === path);
    if (entry === undefined) {
      this.#host.own.disown(path);
      return this.#dropCreated(path, new BackendError(`created ${path} but the listing of ${dir} does not show it`));
    }
    learnToken(entry, token);
    return { entry, queue: entries };
  }
}

/** The 10-digit sequence suffix of one of our entries' paths. */
function sequenceOf(entry: Entry): string {
  return entry.key.slice(-10);
}

import { randomUUID } from 'node:crypto';

import { connect } from 'baton-locks/testing';

import type { Session } from '../../recipes/contract.js';
import { ClosedError, LockTimeoutError, SessionLostError } from '../../recipes/errors.js';
import type { LockHandle } from '../../recipes/handle.js';
import { FairMutex } from '../../recipes/mutex.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import { inspectQueue } from '../../src/inspect.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { quietDirectoriesOf } from '../harness/backends/scope.js';
import { eventually } from '../harness/wait.js';
import { GrantChecks } from './checks.js';
import type { LockModel, ModelEntry } from './lock-model.js';

/** One real acquire (or tryAcquire, or a downgrade's read), for one model entry. */
interface Acquisition {
  readonly entry: ModelEntry;
  readonly session: Session;
  readonly controller: AbortController;
  /** The object that took a write, for a downgrade of it. */
  readonly rw: ReadWriteLock | undefined;
  /** Settles when the call does; never rejects. */
  readonly done: Promise<void>;
  handle: LockHandle | undefined;
  failure: { error: unknown } | undefined;
  settled: boolean;
}

/** A session the test ended (expiry, close), with what it had: all of it must come to an end. */
interface Ended {
  readonly session: Session;
  readonly how: 'expired' | 'closed';
  readonly acquisitions: Acquisition[];
}

/**
 * The real side of a model run: a few sessions on one backend, every acquisition the commands made,
 * and the checks of every grant. Each run has a namespace of its own and leaves nothing in it.
 */
export class RealLocks {
  readonly fixture: Fixture;
  readonly namespace = `model-${randomUUID().slice(0, 8)}`;
  readonly checks = new GrantChecks();
  /** How long an expected grant or loss may take: derived from the backend's loss deadline. */
  readonly patienceMs: number;
  readonly #sessions: Session[] = [];
  readonly #everySession: Session[] = [];
  readonly #acquisitions = new Map<number, Acquisition>();
  readonly #ended: Ended[] = [];

  private constructor(fixture: Fixture) {
    this.fixture = fixture;
    this.patienceMs = fixture.lossDeadlineMs * 2;
  }

  static async open(fixture: Fixture, slots: number): Promise<RealLocks> {
    const real = new RealLocks(fixture);
    try {
      for (let slot = 0; slot < slots; slot += 1) real.#sessions.push(await real.#connect());
    } catch (error) {
      await real.dispose();
      throw error;
    }
    return real;
  }

  session(slot: number): Session {
    return this.#sessions[slot]!;
  }

  acquisition(entry: ModelEntry): Acquisition {
    const found = this.#acquisitions.get(entry.id);
    if (found === undefined) throw new Error(`no acquisition for model entry ${entry.id}`);
    return found;
  }

  /** Starts `acquire()` for a model entry just queued; its outcome is tracked. */
  startAcquire(entry: ModelEntry, timeoutMs?: number): Acquisition {
    const session = this.session(entry.slot);
    const controller = new AbortController();
    const { lock, rw } = lockFor(session, entry);
    return this.#track(entry, session, controller, rw, lock.acquire({ signal: controller.signal, timeoutMs }));
  }

  /** `tryAcquire()` for a model entry: the handle, or null (and the acquisition forgotten). */
  async tryAcquire(entry: ModelEntry): Promise<LockHandle | null> {
    const session = this.session(entry.slot);
    const { lock, rw } = lockFor(session, entry);
    const handle = await lock.tryAcquire();
    if (handle === null) return null;
    await this.#track(entry, session, new AbortController(), rw, Promise.resolve(handle)).done;
    return handle;
  }

  /** Downgrades the write of `write` (held) into the model's read entry `read`. */
  async downgrade(write: ModelEntry, read: ModelEntry): Promise<void> {
    const held = this.acquisition(write);
    this.checks.downgrading(write.lock, write.id);
    const handle = held.rw!.downgrade(held.handle!);
    const tracked = this.#track(read, held.session, new AbortController(), undefined, handle);
    await tracked.done;
    if (tracked.failure !== undefined) throw tracked.failure.error;
    this.checks.givingUp(write.lock, write.id);
    if (held.handle!.held) throw new Error(`the write of entry ${write.id} is still held after its downgrade`);
    this.#acquisitions.delete(write.id);
  }

  async release(entry: ModelEntry): Promise<void> {
    const held = this.acquisition(entry);
    this.checks.givingUp(entry.lock, entry.id);
    await held.handle!.release();
    if (held.handle!.held) throw new Error(`entry ${entry.id} is still held after release()`);
    this.#acquisitions.delete(entry.id);
  }

  /** Aborts a waiting acquire: it must reject with the abort's reason. */
  async abort(entry: ModelEntry): Promise<void> {
    const waiting = this.acquisition(entry);
    const reason = new Error(`abort of entry ${entry.id}`);
    waiting.controller.abort(reason);
    await this.#within(waiting.done, `the aborted acquire of entry ${entry.id} to settle`);
    if (waiting.failure?.error !== reason)
      throw new Error(`entry ${entry.id} aborted: expected its reason, got ${describe(waiting)}`);
    this.#acquisitions.delete(entry.id);
  }

  /** Awaits a timed acquire the model does not grant: it must reject with LockTimeoutError. */
  async timedOut(entry: ModelEntry): Promise<void> {
    const waiting = this.acquisition(entry);
    await this.#within(waiting.done, `the timed acquire of entry ${entry.id} to settle`);
    if (!(waiting.failure?.error instanceof LockTimeoutError))
      throw new Error(`entry ${entry.id}: expected LockTimeoutError, got ${describe(waiting)}`);
    this.#acquisitions.delete(entry.id);
  }

  /**
   * Ends a slot's session from the server side (`expire`) or by `close()`, and opens another in its
   * place. What the ended session held or waited for is checked at the end of the run: its client may
   * learn of an expiry only later (etcd: at the next keepalive).
   */
  async endSession(slot: number, how: 'expired' | 'closed', entries: readonly ModelEntry[]): Promise<void> {
    const session = this.session(slot);
    const acquisitions = entries.map((entry) => this.acquisition(entry));
    for (const entry of entries) {
      this.checks.givingUp(entry.lock, entry.id);
      this.#acquisitions.delete(entry.id);
    }
    this.#ended.push({ session, how, acquisitions });
    if (how === 'expired') await this.fixture.expire(session);
    else await session.close();
    this.#sessions[slot] = await this.#connect();
  }

  /**
   * Waits until the real grants are the model's: every entry the model grants is granted, every other
   * is still waiting; then compares each queue on the server with the model's.
   */
  async settle(model: LockModel): Promise<void> {
    for (const entry of model.granted()) {
      const acquisition = this.acquisition(entry);
      await this.#within(
        acquisition.done,
        `entry ${entry.id} (${entry.kind} of "${entry.lock}" by slot ${entry.slot}) to be granted`,
      );
      if (acquisition.handle === undefined)
        throw new Error(`entry ${entry.id} should be granted: ${describe(acquisition)}`);
    }
    // Listed after the expected grants: a grant out of turn on its way has arrived by the end.
    await this.compareQueues(model);
    for (const entry of model.waiting()) {
      const acquisition = this.acquisition(entry);
      if (acquisition.settled)
        throw new Error(
          `entry ${entry.id} (${entry.kind} of "${entry.lock}") should still wait: ${describe(acquisition)}`,
        );
    }
    this.checks.throwIfViolated();
  }

  /**
   * Each queue as the server lists it (kind and owner of every entry, in order) against the model's,
   * given the moment to settle that a grant needs: an enqueue or a withdrawal may still be on its way.
   */
  async compareQueues(model: LockModel): Promise<void> {
    for (const lock of model.locks) await this.awaitQueued(model, lock);
  }

  /**
   * Waits until `lock`'s queue on the server is the model's, or the model's without `maybeGone` once
   * that acquire (a timed one) has given up: how a step knows that an acquire it started has queued
   * before it starts the next one, whose place is behind it.
   */
  async awaitQueued(model: LockModel, lock: string, maybeGone?: ModelEntry): Promise<void> {
    const describeQueue = (entries: readonly ModelEntry[]): string =>
      entries.map((entry) => `${entry.kind} of ${this.session(entry.slot).id}`).join(', ');
    const expected = describeQueue(model.queue(lock));
    const withoutGone =
      maybeGone === undefined ? undefined : describeQueue(model.queue(lock).filter((entry) => entry !== maybeGone));
    let seen = '';
    try {
      await eventually(
        `queue "${lock}"`,
        async () => {
          // Whether it gave up is read before the listing: a listing without it then shows it gone, not yet to come.
          const gaveUp = maybeGone !== undefined && this.acquisition(maybeGone).failure !== undefined;
          seen = (await inspectQueue(this.session(0), lock)).entries
            .map((entry) => `${entry.kind} of ${entry.session}`)
            .join(', ');
          return seen === expected || (gaveUp && seen === withoutGone);
        },
        this.patienceMs,
      );
    } catch {
      throw new Error(
        `queue "${lock}" on the server: [${seen}], expected [${expected}]${withoutGone === undefined ? '' : ` or, once it gave up, [${withoutGone}]`}`,
      );
    }
  }

  /**
   * The end of a run: every session the test ended told its holders and waiters (lost handles, waits
   * rejected with the session's error), no watch left behind, every session closed, no entry left.
   */
  async finish(): Promise<void> {
    for (const { session, how, acquisitions } of this.#ended) {
      const expected = how === 'expired' ? SessionLostError : ClosedError;
      await this.#within(Promise.all(acquisitions.map((a) => a.done)), `the waits of a session ${how} to end`);
      for (const acquisition of acquisitions) {
        if (acquisition.handle === undefined && !(acquisition.failure?.error instanceof expected)) {
          throw new Error(
            `a wait of the session ${how} (entry ${acquisition.entry.id}): expected ${expected.name}, got ${describe(acquisition)}`,
          );
        }
      }
      const handles = acquisitions.flatMap((a) => (a.handle === undefined ? [] : [a.handle]));
      await eventually(
        `the handles of a session ${how} to be lost`,
        () => handles.every((handle) => !handle.held),
        this.patienceMs,
      );
      if (how === 'expired')
        await eventually('the expired session to be lost', () => session.state === 'lost', this.patienceMs);
    }
    if (this.#acquisitions.size > 0)
      throw new Error(`acquisitions left at the end of the run: ${[...this.#acquisitions.keys()].join(', ')}`);
    // Before the sessions close, which would take their watches with them.
    const quiet = new Set(this.#sessions.flatMap((session) => quietDirectoriesOf(this.fixture, session)));
    const watched = (await this.fixture.watched(this.namespace)).filter((path) => !quiet.has(path));
    if (watched.length > 0) throw new Error(`watches left on the server: ${watched.join(', ')}`);
    const ids = this.#everySession.map((session) => session.id);
    await this.#closeAll();
    const left = await this.fixture.entries(this.namespace);
    if (left.length > 0) throw new Error(`entries left on the server: ${left.join(', ')}`);
    const alive = await this.fixture.liveSessions(ids);
    if (alive.length > 0) throw new Error(`sessions alive on the server after close(): ${alive.join(', ')}`);
  }

  /** Closes whatever is open and removes the namespace, after a failure too. */
  async dispose(): Promise<void> {
    await this.#closeAll();
    await this.fixture.cleanup(this.namespace).catch(() => undefined);
  }

  async #closeAll(): Promise<void> {
    await Promise.allSettled(this.#everySession.map((session) => session.close()));
  }

  async #connect(): Promise<Session> {
    const session = await connect(this.fixture.url(this.namespace), this.fixture.options);
    this.#everySession.push(session);
    return session;
  }

  #track(
    entry: ModelEntry,
    session: Session,
    controller: AbortController,
    rw: ReadWriteLock | undefined,
    call: Promise<LockHandle>,
  ): Acquisition {
    const acquisition: Acquisition = {
      entry,
      session,
      controller,
      rw,
      handle: undefined,
      failure: undefined,
      settled: false,
      done: call.then(
        (handle) => {
          acquisition.handle = handle;
          acquisition.settled = true;
          this.checks.granted(
            entry.lock,
            entry.id,
            entry.kind,
            entry.place,
            handle.fencingToken,
            `entry ${entry.id} (${entry.kind} by slot ${entry.slot})`,
          );
        },
        (error: unknown) => {
          acquisition.failure = { error };
          acquisition.settled = true;
        },
      ),
    };
    this.#acquisitions.set(entry.id, acquisition);
    return acquisition;
  }

  /** Awaits `promise`, failing the run if it takes longer than the backend could need. */
  async #within(promise: Promise<unknown>, what: string): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`waited ${this.patienceMs} ms for ${what}`)), this.patienceMs);
    });
    try {
      await Promise.race([promise, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}

/** A fresh recipe object for an entry: a FairMutex, or a ReadWriteLock's half (kept, for a downgrade). */
function lockFor(
  session: Session,
  entry: ModelEntry,
): { lock: FairMutex | ReadWriteLock['readLock']; rw: ReadWriteLock | undefined } {
  if (entry.kind === 'lock') return { lock: new FairMutex(session, entry.lock), rw: undefined };
  const rw = new ReadWriteLock(session, entry.lock);
  return { lock: entry.kind === 'read' ? rw.readLock : rw.writeLock, rw };
}

function describe(acquisition: Acquisition): string {
  if (!acquisition.settled) return 'still waiting';
  if (acquisition.handle !== undefined) return `granted (token ${acquisition.handle.fencingToken})`;
  const { error } = acquisition.failure!;
  return `failed with ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`;
}

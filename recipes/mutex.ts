import type { AsyncLocalStorage } from 'node:async_hooks';

import type { Entry, Session } from './contract.js';
import { coreOf, isSession } from './contract.js';
import { exclusive, exclusiveLookahead } from './decide.js';
import { InvalidArgumentError } from './errors.js';
import { LockHandle } from './handle.js';
import { limitHold } from './hold-limit.js';
import { runHolding } from './holding.js';
import { LOCK_INTEROP, type LockOptions, validateRecipeOptions } from './interop.js';
import { listParticipants, type Participant, type ParticipantsOptions } from './participants.js';
import { assertUsable, type QueueRequest, tryTurn, waitForTurn } from './queue.js';
import {
  type HoldOptions,
  validateHoldOptions,
  validateName,
  validateWaitOptions,
  type WaitOptions,
} from './validate.js';

/** What FairMutex, a ReadWriteLock's readLock and its writeLock have in common. */
export interface Lock {
  /** The lock name, as validated (`payments/settlement`). */
  readonly name: string;
  /**
   * Queues for the lock and resolves with its handle once granted (FIFO: in the order contenders
   * queued, whichever client queued them). Rejects with `LockTimeoutError` after `timeoutMs`, with
   * `signal.reason` when `signal` aborts, with `SessionLostError` or `ClosedError` when the session
   * ends; the queue entry is withdrawn first on every give-up. `InvalidArgumentError` for bad options
   * (an unknown key, a negative timeout). Waits without a limit by default. With `maxHoldMs` the hold
   * ends by itself once it lasted that long (its signal aborts with `HoldLimitError`).
   */
  acquire(options?: HoldOptions): Promise<LockHandle>;
  /**
   * Takes the lock only if nobody holds it or waits ahead: resolves with the handle, or null at once
   * (never waits; the entry is withdrawn). Rejects with `SessionLostError` or `ClosedError` if the
   * session ended, or the backend's error.
   */
  tryAcquire(): Promise<LockHandle | null>;
  /**
   * Acquires (as `acquire(options)`), runs `fn` with the handle, and releases whatever `fn` did; resolves
   * with what `fn` returned, rejects with what it threw (or an `acquire` error). Pass `lock.signal` to
   * the work and check `lock.held` before acting: the lock can be lost while `fn` runs.
   */
  withLock<T>(fn: (lock: LockHandle) => Promise<T> | T, options?: HoldOptions): Promise<T>;
}

/**
 * Hooks a recipe built on the queue lock can set: where a new entry goes, and what is held. `owner` is
 * who asks: undefined for the lock object's own calls, a `Reentrant`'s owner for its calls.
 */
export interface QueueLockHooks {
  /** Called before every acquire: an entry of ours to take the place of, or undefined; may throw. */
  place?(owner: unknown): Entry | undefined;
  /** Called with every granted handle. */
  granted?(lock: LockHandle, owner: unknown): void;
}

/**
 * The queue-backed lock behind FairMutex and both halves of ReadWriteLock (users see it as `Lock`).
 * `ownerContext`: where a `Reentrant` around this lock finds the current owner, shared by the halves
 * of one ReadWriteLock, so that code holding one half and taking the other inside is the same owner.
 */
export class QueueLock implements Lock {
  readonly name: string;
  #request: QueueRequest;
  readonly #hooks: QueueLockHooks;
  readonly ownerContext: AsyncLocalStorage<unknown> | undefined;

  constructor(request: QueueRequest, hooks: QueueLockHooks = {}, ownerContext?: AsyncLocalStorage<unknown>) {
    this.name = request.queue;
    this.#request = request;
    this.#hooks = hooks;
    this.ownerContext = ownerContext;
  }

  acquire(options?: HoldOptions): Promise<LockHandle> {
    try {
      const checked = validateHoldOptions(options);
      const { maxHoldMs } = checked;
      // Without an async frame of its own: the grant is one step after the wait, not two.
      if (maxHoldMs === undefined) return waitForTurn(this.#placed(undefined), checked).then(this.#granting);
      return waitForTurn(this.#placed(undefined), checked).then((entry) => this.#grant(entry, undefined, maxHoldMs));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * An acquire on behalf of `owner` (a `Reentrant`'s): the hooks tell owners apart, so that
   * one owner's write lock does not let another owner's read lock in, for instance.
   */
  async acquireAs(owner: unknown, options: WaitOptions): Promise<LockHandle> {
    const entry = await waitForTurn(this.#placed(owner), validateWaitOptions(options));
    return this.#grant(entry, owner);
  }

  async tryAcquire(): Promise<LockHandle | null> {
    const entry = await tryTurn(this.#placed(undefined));
    return entry === null ? null : this.#grant(entry);
  }

  withLock<T>(fn: (lock: LockHandle) => Promise<T> | T, options?: HoldOptions): Promise<T> {
    return runHolding(fn, () => this.acquire(options));
  }

  #placed(owner: unknown): QueueRequest {
    const at = this.#hooks.place?.(owner);
    return at === undefined ? this.#request : { ...this.#request, at };
  }

  readonly #granting = (entry: Entry): LockHandle => this.#grant(entry);

  /** Traces this lock's waits and holds as `recipe`'s (a MultiLock's mutexes), before any wait. */
  traceAs(recipe: string): void {
    this.#request = { ...this.#request, recipe };
  }

  /** The session's contenders for this lock (see `Participant`). */
  participants(options?: ParticipantsOptions): Promise<Participant[]> {
    return listParticipants(this.#request.session, this.#request.core, this.name, options);
  }

  #grant(entry: Entry, owner?: unknown, maxHoldMs?: number): LockHandle {
    const { core, what } = this.#request;
    const lock = new LockHandle(limitHold(core, maxHoldMs, what), entry, what);
    this.#hooks.granted?.(lock, owner);
    return lock;
  }
}

/** The session a recipe is made on: one from connect() (awaited), still open. */
export function checkSession(session: unknown): Session {
  if (session instanceof Promise)
    throw new InvalidArgumentError(
      'session',
      session,
      'a session from connect(), awaited: this is the Promise connect() returned',
    );
  if (!isSession(session)) throw new InvalidArgumentError('session', session, 'a session from connect()');
  assertUsable(session);
  return session;
}

/**
 * The queue lock behind a lock object the recipes made (FairMutex, a ReadWriteLock's halves), for a
 * `Reentrant` around it; undefined for any other `Lock`.
 */
export function queueLockOf(lock: Lock): QueueLock | undefined {
  return lock instanceof QueueLock ? lock : lock instanceof FairMutex ? innerOf(lock) : undefined;
}

let innerOf: (mutex: FairMutex) => QueueLock;

/**
 * A fair (FIFO) mutual-exclusion lock: contenders are granted in the order they queued, whichever
 * client queued them (Curator's InterProcessMutex, kazoo's Lock, etcd's Go Mutex on the same path).
 * Cheap to make; holds nothing on the server until `acquire`.
 */
export class FairMutex implements Lock {
  /** {@inheritDoc Lock.name} */
  readonly name: string;
  readonly #lock: QueueLock;

  static {
    innerOf = (mutex) => mutex.#lock;
  }

  /**
   * A lock named `name` on `session`; sends nothing to the server. Throws `InvalidNameError` for a bad
   * name (segments of `A-Za-z0-9._-` separated by `/`), `InvalidArgumentError` for a session that is
   * not one from an awaited `connect()` or for bad options, `ClosedError` or `SessionLostError` for a
   * session that already ended.
   */
  constructor(session: Session, name: string, options?: LockOptions) {
    const queue = validateName(name);
    const checked = checkSession(session);
    const dialect = validateRecipeOptions(options, checked, LOCK_INTEROP);
    this.name = queue;
    this.#lock = new QueueLock({
      session: checked,
      core: coreOf(checked),
      queue,
      kind: 'lock',
      decide: exclusive,
      lookahead: exclusiveLookahead,
      what: `lock "${queue}"`,
      dialect,
    });
  }

  /** {@inheritDoc Lock.acquire} */
  acquire(options?: HoldOptions): Promise<LockHandle> {
    return this.#lock.acquire(options);
  }

  /** {@inheritDoc Lock.tryAcquire} */
  tryAcquire(): Promise<LockHandle | null> {
    return this.#lock.tryAcquire();
  }

  /** {@inheritDoc Lock.withLock} */
  withLock<T>(fn: (lock: LockHandle) => Promise<T> | T, options?: HoldOptions): Promise<T> {
    return this.#lock.withLock(fn, options);
  }

  /**
   * The lock's contenders as the server has them now, in queue order: holder and waiters, baton's and
   * peers' (Curator, kazoo, etcd's Go Mutex), with session, age, lease left and fencing token. Rejects
   * with `LockTimeoutError` after `timeoutMs`, `signal.reason` on abort, or the session's or backend's error.
   */
  participants(options?: ParticipantsOptions): Promise<Participant[]> {
    return this.#lock.participants(options);
  }
}

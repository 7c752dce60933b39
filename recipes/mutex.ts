import type { AsyncLocalStorage } from 'node:async_hooks';
import type { Entry, Session } from './contract.js';
import { isSession } from './contract.js';
import { exclusive } from './decide.js';
import { InvalidArgumentError } from './errors.js';
import { LockHandle } from './handle.js';
import { LOCK_INTEROP, validateRecipeOptions, type LockOptions } from './interop.js';
import { assertUsable, tryTurn, waitForTurn, type QueueRequest } from './queue.js';
import { validateName, validateWaitOptions, type WaitOptions } from './validate.js';

/** What FairMutex, readLock and writeLock have in common. */
export interface Lock {
  readonly name: string;
  acquire(options?: WaitOptions): Promise<LockHandle>;
  tryAcquire(): Promise<LockHandle | null>;
  withLock<T>(fn: (lock: LockHandle) => Promise<T> | T, options?: WaitOptions): Promise<T>;
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

/** The queue-backed lock shared by FairMutex and both halves of ReadWriteLock. */
export class QueueLock implements Lock {
  readonly name: string;
  readonly #request: QueueRequest;
  readonly #hooks: QueueLockHooks;
  /**
   * @internal Where a `Reentrant` around this lock finds the current owner: shared by the halves of one
   * ReadWriteLock, so that code holding one half and taking the other inside is the same owner.
   */
  readonly ownerContext: AsyncLocalStorage<unknown> | undefined;

  constructor(request: QueueRequest, hooks: QueueLockHooks = {}, ownerContext?: AsyncLocalStorage<unknown>) {
    this.name = request.queue;
    this.#request = request;
    this.#hooks = hooks;
    this.ownerContext = ownerContext;
  }

  acquire(options?: WaitOptions): Promise<LockHandle> {
    try {
      const checked = validateWaitOptions(options);
      // Without an async frame of its own: the grant is one step after the wait, not two.
      return waitForTurn(this.#placed(undefined), checked).then(this.#granting);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * @internal An acquire on behalf of `owner` (a `Reentrant`'s): the hooks tell owners apart, so that
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

  async withLock<T>(fn: (lock: LockHandle) => Promise<T> | T, options?: WaitOptions): Promise<T> {
    if (typeof fn !== 'function') throw new InvalidArgumentError('fn', fn, 'a function');
    const lock = await this.acquire(options);
    try {
      return await fn(lock);
    } finally {
      await lock.release();
    }
  }

  #placed(owner: unknown): QueueRequest {
    const at = this.#hooks.place?.(owner);
    return at === undefined ? this.#request : { ...this.#request, at };
  }

  readonly #granting = (entry: Entry): LockHandle => this.#grant(entry);

  #grant(entry: Entry, owner?: unknown): LockHandle {
    const lock = new LockHandle(this.#request.session, entry, this.#request.what);
    this.#hooks.granted?.(lock, owner);
    return lock;
  }
}

/** The session a recipe is made on: one from connect() (awaited), still open. */
export function checkSession(session: unknown): Session {
  if (session instanceof Promise) throw new InvalidArgumentError('session', session, 'a session from connect(), awaited: this is the Promise connect() returned');
  if (!isSession(session)) throw new InvalidArgumentError('session', session, 'a session from connect()');
  assertUsable(session);
  return session;
}

/**
 * A fair (FIFO) mutual-exclusion lock: contenders are granted in the order they queued, whichever
 * client queued them (Curator's InterProcessMutex, kazoo's Lock, etcd's Go Mutex on the same path).
 */
export class FairMutex extends QueueLock {
  constructor(session: Session, name: string, options?: LockOptions) {
    const queue = validateName(name);
    const checked = checkSession(session);
    const dialect = validateRecipeOptions(options, checked, LOCK_INTEROP);
    super({ session: checked, queue, kind: 'lock', decide: exclusive, what: `lock "${queue}"`, dialect });
  }
}

import { AsyncLocalStorage } from 'node:async_hooks';

import { deadline } from './deadline.js';
import { InvalidArgumentError, NotHeldError } from './errors.js';
import type { LockHandle } from './handle.js';
import { type Lock, type QueueLock, queueLockOf } from './mutex.js';
import { validateWaitOptions, type WaitOptions } from './validate.js';

/** Options of `Reentrant.acquire` and `withLock`: a timeout and signal, and who the owner is. */
export interface ReentrantOptions extends WaitOptions {
  /**
   * Who holds: any value compared by identity. Defaults to the owner of the surrounding `withLock`
   * call (the async context), or a new owner for a top-level call.
   */
  readonly owner?: unknown;
}

/** One server-side hold of one owner, shared by all its nesting levels. */
interface OwnerHold {
  readonly lock: LockHandle;
  count: number;
}

/**
 * One level of a reentrant hold. Releasing it twice is harmless; the lock goes back to the server at
 * level zero. `await using` releases its level at the end of the block.
 */
export class ReentrantHandle implements AsyncDisposable {
  /** One release per level, shared by concurrent calls: two at once must not take two levels. */
  #releasing: Promise<void> | undefined;
  readonly #reentrant: Reentrant;
  readonly #owner: unknown;
  readonly #hold: OwnerHold;

  /** @internal Made by `Reentrant` on every acquire, never by users. */
  constructor(reentrant: Reentrant, owner: unknown, hold: OwnerHold) {
    this.#reentrant = reentrant;
    this.#owner = owner;
    this.#hold = hold;
  }

  /** The name of the lock held. */
  get name(): string {
    return this.#reentrant.name;
  }

  /**
   * Whether this level still holds: false once it was released, or once the lock was lost (check it,
   * or `signal`, before acting on the protected resource).
   */
  get held(): boolean {
    return this.#releasing === undefined && this.#hold.lock.held;
  }

  /** The fencing token of the lock held: the same at every level. */
  get fencingToken(): bigint {
    return this.#hold.lock.fencingToken;
  }

  /** The same signal for every level: losing the lock ends the hold at all levels at once. */
  get signal(): AbortSignal {
    return this.#hold.lock.signal;
  }

  /**
   * Releases this level: the server entry goes back when the owner's last level is released (resolving
   * once the server confirmed it). Idempotent per level. Rejects with the backend's error if the
   * delete failed (a later call tries again).
   */
  release(): Promise<void> {
    this.#releasing ??= this.#reentrant[RELEASE_HOLD](this.#owner, this.#hold).catch((error: unknown) => {
      this.#releasing = undefined; // not released: the next call may try again
      throw error;
    });
    return this.#releasing;
  }

  /** `release()`, for `await using lock = await reentrant.acquire()`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

const RELEASE_HOLD = Symbol('releaseHold');

/**
 * Makes a FairMutex, readLock or writeLock reentrant for one owner: the same owner acquiring again
 * raises a local hold count and gets the same fencing token without any server request; the server
 * entry goes back only when the count returns to zero. Different owners in one process queue on the
 * server exactly like different processes (global FIFO), so fairness is the same for everyone.
 */
export class Reentrant {
  readonly #lock: Lock;
  readonly #context: AsyncLocalStorage<unknown>;
  readonly #holds = new Map<unknown, OwnerHold>();
  /** First acquires still in flight, so that a second call by the same owner joins instead of queueing. */
  readonly #pending = new Map<unknown, Promise<LockHandle>>();
  /** The queue lock behind the wrapped lock, when the recipes made it: it tells owners apart. */
  readonly #queueLock: QueueLock | undefined;

  /**
   * Wraps `lock` (a FairMutex, a ReadWriteLock's readLock or writeLock); sends nothing to the server.
   * Throws `InvalidArgumentError` for anything else.
   */
  constructor(lock: Lock) {
    if (typeof lock !== 'object' || lock === null || typeof lock.acquire !== 'function') {
      throw new InvalidArgumentError('lock', lock, 'a FairMutex, readLock or writeLock');
    }
    this.#lock = lock;
    this.#queueLock = queueLockOf(lock);
    // The halves of one ReadWriteLock share theirs: nested calls across them are one owner.
    this.#context = this.#queueLock?.ownerContext ?? new AsyncLocalStorage<unknown>();
  }

  /** The name of the wrapped lock. */
  get name(): string {
    return this.#lock.name;
  }

  /** OwnerHold count of the owner of the current async context (0 outside any withLock). */
  get holdCount(): number {
    return this.holdCountOf(this.#context.getStore());
  }

  /** OwnerHold count of `owner` (0 if it holds nothing). */
  holdCountOf(owner: unknown): number {
    return this.#holds.get(owner)?.count ?? 0;
  }

  /**
   * One more level for the owner (`options.owner`, else the surrounding `withLock`'s, else a new
   * one): at once and without a server request if it holds the lock, otherwise queued on the server
   * like any other contender. Rejects as the wrapped lock's `acquire` does (`LockTimeoutError`,
   * `signal.reason`, `SessionLostError`, `ClosedError`, `InvalidArgumentError`).
   */
  async acquire(options: ReentrantOptions = {}): Promise<ReentrantHandle> {
    const owner = this.#owner(options);
    const checked = validateWaitOptions(withoutOwner(options));
    checked.signal?.throwIfAborted();
    const held = this.#holds.get(owner);
    if (held !== undefined && held.lock.held) {
      held.count += 1;
      return new ReentrantHandle(this, owner, held);
    }
    // A lost hold is over at every level; its levels may still be released, harmlessly.
    if (held !== undefined) this.#holds.delete(owner);
    const pending = this.#pending.get(owner);
    if (pending !== undefined) {
      // Join the owner's acquire in flight, within this call's own timeout and signal.
      const started = performance.now();
      await settledWithin(pending, checked, `lock "${this.name}"`);
      const left =
        checked.timeoutMs === undefined ? undefined : Math.max(0, checked.timeoutMs - (performance.now() - started));
      return this.acquire({ ...options, owner, timeoutMs: left });
    }
    // On behalf of the owner, where the lock tells owners apart (the halves of a ReadWriteLock).
    const acquiring =
      this.#queueLock !== undefined ? this.#queueLock.acquireAs(owner, checked) : this.#lock.acquire(checked);
    this.#pending.set(owner, acquiring);
    try {
      const hold: OwnerHold = { lock: await acquiring, count: 1 };
      this.#holds.set(owner, hold);
      return new ReentrantHandle(this, owner, hold);
    } finally {
      this.#pending.delete(owner);
    }
  }

  /**
   * Releases one level of `owner`'s hold (default: the current context's owner). Throws
   * `NotHeldError` if that owner holds no level, `InvalidArgumentError` for options that are not an object.
   */
  async release(options: { owner?: unknown } = {}): Promise<void> {
    if (typeof options !== 'object' || options === null)
      throw new InvalidArgumentError('options', options, 'an object such as { owner }');
    const owner = 'owner' in options ? options.owner : this.#context.getStore();
    const held = this.#holds.get(owner);
    if (held === undefined) throw new NotHeldError(`${this.name}: released more often than acquired by this owner`);
    await this[RELEASE_HOLD](owner, held);
  }

  /** @internal One level of one hold; the server entry goes back at level zero. */
  async [RELEASE_HOLD](owner: unknown, hold: OwnerHold): Promise<void> {
    if (hold.count === 0) throw new NotHeldError(`${this.name}: released more often than acquired by this owner`);
    if (hold.count > 1) {
      hold.count -= 1;
      return;
    }
    // Local ownership ends only once the server has confirmed the delete.
    await hold.lock.release();
    hold.count = 0;
    if (this.#holds.get(owner) === hold) this.#holds.delete(owner);
  }

  /**
   * Runs `fn` holding the lock, as the current owner (nested calls inside `fn` re-enter), and releases
   * its level afterwards, whatever `fn` did. Resolves with what `fn` returned; rejects with what it
   * threw or an `acquire` error.
   */
  async withLock<T>(fn: (lock: ReentrantHandle) => Promise<T> | T, options: ReentrantOptions = {}): Promise<T> {
    if (typeof fn !== 'function') throw new InvalidArgumentError('fn', fn, 'a function');
    const owner = this.#owner(options);
    const handle = await this.acquire({ ...options, owner });
    try {
      return await this.#context.run(owner, () => fn(handle));
    } finally {
      await handle.release();
    }
  }

  #owner(options: ReentrantOptions): unknown {
    if (typeof options !== 'object' || options === null) return Symbol('owner');
    if ('owner' in options && options.owner !== undefined) return options.owner;
    return this.#context.getStore() ?? Symbol('owner');
  }
}

function withoutOwner(options: ReentrantOptions): WaitOptions {
  if (typeof options !== 'object' || options === null) return options;
  const { owner: _owner, ...rest } = options;
  return rest;
}

/** Waits for `pending` to settle, or rejects when the options' timeout runs out or their signal aborts. */
async function settledWithin(pending: Promise<unknown>, options: WaitOptions, what: string): Promise<void> {
  const wait = deadline(what, options.timeoutMs, [options.signal]);
  try {
    await new Promise<void>((resolve, reject) => {
      if (wait.signal.aborted) reject(wait.signal.reason);
      wait.signal.addEventListener('abort', () => reject(wait.signal.reason), { once: true });
      pending.then(
        () => resolve(),
        () => resolve(),
      );
    });
  } finally {
    wait.dispose();
  }
}

import type { Session } from './contract.js';
import { HoldLimitError, InvalidArgumentError, LockTimeoutError } from './errors.js';
import type { LockHandle } from './handle.js';
import { runHolding } from './holding.js';
import type { LockOptions } from './interop.js';
import { checkSession, FairMutex, queueLockOf } from './mutex.js';
import type { Participant, ParticipantsOptions } from './participants.js';
import { type HoldOptions, validateHoldOptions, validateName } from './validate.js';

/**
 * Several locks held as one, all or nothing: a `FairMutex` per name, always entered in one canonical
 * order (the names sorted by their UTF-16 code units, as JavaScript's default sort orders them), so that
 * two MultiLocks, or a MultiLock and single FairMutexes on the same names, can never wait for each other
 * in a cycle. A peer's multi-lock (Curator's `InterProcessMultiLock`) takes its locks in the order it is
 * given, so it can deadlock with a MultiLock unless it is given the names in this order. Each lock of the set is a plain FairMutex entry: a FairMutex (or a Curator or kazoo lock)
 * on one of the names queues with it, and the session's `'lock'` events tell each lock's wait and
 * hold (kind `lock`). Throws `InvalidArgumentError` for a list that is empty, not an array, or names one
 * lock twice, `InvalidNameError` for a bad name, and the session's `ClosedError` / `SessionLostError`.
 */
export class MultiLock {
  /** The lock names in the order they are taken (sorted). */
  readonly names: readonly string[];
  readonly #mutexes: readonly FairMutex[];
  readonly #what: string;

  /** `options.interop` is handed to every FairMutex of the set (see `LockOptions`). */
  constructor(session: Session, names: readonly string[], options?: LockOptions) {
    const checked = checkSession(session);
    this.names = canonicalNames(names);
    this.#mutexes = this.names.map((name) => {
      const mutex = new FairMutex(checked, name, options);
      queueLockOf(mutex)?.traceAs('multilock');
      return mutex;
    });
    this.#what = `multi-lock [${this.names.map((name) => `"${name}"`).join(', ')}]`;
  }

  /**
   * Takes every lock, one after the other in the canonical order, within one `timeoutMs` for the whole
   * set. On a timeout (`LockTimeoutError`), an abort (`signal.reason`) or any failure part-way, every
   * lock already held or waited for is given back before the promise rejects. With `maxHoldMs` each
   * lock's hold is limited from its own grant, and when the first-taken lock's limit passes, the set's
   * signal aborts with `HoldLimitError` and every lock of the set is given back.
   */
  async acquire(options?: HoldOptions): Promise<MultiLockHandle> {
    const { timeoutMs, signal, maxHoldMs, holdWarningMs } = validateHoldOptions(options);
    const startedAt = performance.now();
    const held: LockHandle[] = [];
    try {
      for (const mutex of this.#mutexes) {
        const left = timeoutMs === undefined ? undefined : Math.max(0, timeoutMs - (performance.now() - startedAt));
        // holdWarningMs is timed per lock from its own grant, as maxHoldMs is.
        held.push(await mutex.acquire({ timeoutMs: left, signal, maxHoldMs, holdWarningMs }));
      }
    } catch (error) {
      await releaseAll(held);
      if (error instanceof LockTimeoutError && timeoutMs !== undefined)
        throw new LockTimeoutError(this.#what, timeoutMs, { cause: error });
      throw error;
    }
    const locks = new MultiLockHandle(held);
    if (maxHoldMs !== undefined) releaseAllOnLimit(held);
    return locks;
  }

  /**
   * Each lock's contenders as the server has them now, by name (see `FairMutex.participants`). Rejects
   * as one lock's `participants()` does.
   */
  async participants(options?: ParticipantsOptions): Promise<Map<string, Participant[]>> {
    const lists = await Promise.all(this.#mutexes.map((mutex) => mutex.participants(options)));
    return new Map(this.names.map((name, index) => [name, lists[index]!]));
  }

  /** Takes every lock if each is free right now, or none (null). Never waits. */
  async tryAcquire(): Promise<MultiLockHandle | null> {
    const held: LockHandle[] = [];
    try {
      for (const mutex of this.#mutexes) {
        const lock = await mutex.tryAcquire();
        if (lock === null) {
          await releaseAll(held);
          return null;
        }
        held.push(lock);
      }
    } catch (error) {
      await releaseAll(held);
      throw error;
    }
    return new MultiLockHandle(held);
  }

  /** Runs `fn` holding every lock and releases them afterwards, also when `fn` throws. Rejects as `acquire` does. */
  withLock<T>(fn: (locks: MultiLockHandle) => Promise<T> | T, options?: HoldOptions): Promise<T> {
    return runHolding(fn, () => this.acquire(options));
  }
}

/**
 * The locks of a MultiLock, held together. `signal` aborts (with that lock's `LockLostError`) as soon
 * as any one of them is in doubt; `release()` gives all of them back and is idempotent.
 */
export class MultiLockHandle implements AsyncDisposable {
  /** The lock names, in the order they were taken. */
  readonly names: readonly string[];
  /** Each lock's fencing token, by name: hand each resource the token of its own lock. */
  readonly fencingTokens: ReadonlyMap<string, bigint>;
  readonly #locks: readonly LockHandle[];
  #controller: AbortController | undefined;

  /** @internal Made by `MultiLock`. */
  constructor(locks: readonly LockHandle[]) {
    this.#locks = locks;
    this.names = locks.map((lock) => lock.name);
    this.fencingTokens = new Map(locks.map((lock) => [lock.name, lock.fencingToken]));
  }

  /** Aborted with the first lost lock's `LockLostError` when any lock of the set is in doubt. */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      const controller = (this.#controller = new AbortController());
      for (const lock of this.#locks) {
        const { signal } = lock;
        if (signal.aborted) controller.abort(signal.reason);
        else signal.addEventListener('abort', () => controller.abort(signal.reason), { once: true });
      }
    }
    return this.#controller.signal;
  }

  /** True while every lock of the set is held (see `LockHandle.held`). */
  get held(): boolean {
    return this.#locks.every((lock) => lock.held);
  }

  /** Gives every lock back; rejects if some release failed (call again to retry those). Idempotent. */
  async release(): Promise<void> {
    const outcomes = await Promise.allSettled(this.#locks.map((lock) => lock.release()));
    const failed = outcomes.find((outcome) => outcome.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  /** `await using` releases every lock of the set (see `release`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

/** All or nothing: once one lock's hold limit passed, the others of the set are given back too. */
function releaseAllOnLimit(locks: readonly LockHandle[]): void {
  for (const lock of locks) {
    lock.signal.addEventListener(
      'abort',
      () => {
        if (lock.signal.reason instanceof HoldLimitError) void releaseAll(locks);
      },
      { once: true },
    );
  }
}

/** Gives back what a part-way acquire took; a failed release leaves the entry to its session's end. */
async function releaseAll(locks: readonly LockHandle[]): Promise<void> {
  await Promise.allSettled(locks.map((lock) => lock.release()));
}

/** The names, checked, in the one order every MultiLock takes them in. */
function canonicalNames(names: unknown): string[] {
  if (!Array.isArray(names)) throw new InvalidArgumentError('names', names, 'an array of lock names');
  if (names.length === 0) throw new InvalidArgumentError('names', names, 'a non-empty array of lock names');
  const sorted = names.map((name: unknown) => validateName(name)).sort();
  for (let i = 1; i < sorted.length; i += 1) {
    if (sorted[i] === sorted[i - 1])
      throw new InvalidArgumentError('names', names, `distinct lock names ("${sorted[i]}" appears twice)`);
  }
  return sorted;
}

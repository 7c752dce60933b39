import { coreOf, type Entry, type Session, type SessionCore } from './contract.js';
import { InvalidArgumentError } from './errors.js';
import { entryOf, LockHandle } from './handle.js';
import { limitHold } from './hold-limit.js';
import { runHolding } from './holding.js';
import { checkSession } from './mutex.js';
import { listParticipants, type Participant, type ParticipantsOptions } from './participants.js';
import { askOf, semaphoreDecide, semaphoreKind } from './permits.js';
import { type QueueRequest, tryTurn, waitForTurn } from './queue.js';
import {
  checkOptionKeys,
  type HoldOptions,
  quoted,
  validateMaxHold,
  validateName,
  validateSignal,
  validateTimeout,
  type WaitOptions,
} from './validate.js';

/** The largest `permits`: what every peer language counts in a 32-bit integer. */
export const MAX_PERMITS = 2_147_483_647;

/** Options of `new Semaphore(session, name, options)`. */
export interface SemaphoreOptions {
  /**
   * How many permits the semaphore has: at most this many are held at once, over all sessions. Every
   * participant of one semaphore must give the same number (see `PermitsMismatchError`). Required.
   */
  readonly permits: number;
}

/** Options of `Semaphore.acquire` and `withPermit`: a wait's, a hold's limit, and how many permits to take. */
export interface PermitOptions extends HoldOptions {
  /** How many permits to take at once, from 1 (the default) to the semaphore's `permits`. */
  readonly count?: number | undefined;
}

/** Options of `Semaphore.tryAcquire`. */
export interface TryPermitOptions {
  /** How many permits to take at once, from 1 (the default) to the semaphore's `permits`. */
  readonly count?: number | undefined;
}

/**
 * Permits taken from a `Semaphore`: a lock handle (`fencingToken`, `signal` aborting with
 * `LockLostError` when ownership is in doubt, idempotent `release()`, `Symbol.asyncDispose`) that also
 * says how many permits it holds.
 */
export class PermitHandle extends LockHandle {
  /** How many permits this handle holds. */
  get count(): number {
    // Read from the entry's kind rather than kept: a field of the subclass's own costs every grant.
    return askOf(entryOf(this).kind)!.count;
  }
}

/**
 * A fair (FIFO) counting semaphore: at most `permits` permits are held at once over every session on
 * the name, and they are granted in the order asked for. A waiter asking for more permits than are
 * free blocks those behind it, so that a large ask is never starved by small ones. A release wakes only
 * the waiters that may now hold. The name is the semaphore's own: an acquire that finds another
 * recipe's entries on it, or entries made with other `permits`, fails with `PermitsMismatchError`.
 * Throws `InvalidNameError`, `InvalidArgumentError` (bad or missing `permits`, an unknown option) or
 * the session's `ClosedError` / `SessionLostError`.
 */
export class Semaphore {
  /** The semaphore's name, validated (the queue every participant shares). */
  readonly name: string;
  /** How many permits the semaphore has. */
  readonly permits: number;
  readonly #session: Session;
  readonly #core: SessionCore;
  readonly #what: string;
  readonly #decide: QueueRequest['decide'];
  /** The request for each count asked for so far: most callers ask for one count, again and again. */
  readonly #requests = new Map<number, QueueRequest>();
  #one: QueueRequest | undefined;

  /**
   * A semaphore named `name` on `session` with `options.permits` permits (required, a positive integer,
   * the same for every participant). Throws `InvalidNameError`, `InvalidArgumentError` or the session's
   * `ClosedError` / `SessionLostError`; nothing is sent to the server until an acquire.
   */
  constructor(session: Session, name: string, options: SemaphoreOptions) {
    this.name = validateName(name);
    this.#session = checkSession(session);
    this.#core = coreOf(this.#session);
    this.permits = validatePermits(options);
    this.#what = `semaphore "${this.name}"`;
    this.#decide = semaphoreDecide(this.permits, this.#what);
  }

  /**
   * Takes `count` permits (default 1), waiting in FIFO order until they are free. Rejects with
   * `LockTimeoutError` after `timeoutMs`, with `signal.reason` when `signal` aborts, with
   * `PermitsMismatchError` (see the class), or with the session's error when it ends; on every give-up
   * the waiter's entry is withdrawn before the promise settles. With `maxHoldMs` the permits are given
   * back by themselves once held that long (the signal aborts with `HoldLimitError`).
   */
  acquire(options?: PermitOptions): Promise<PermitHandle> {
    try {
      const { count, wait, maxHoldMs } = this.#checkAcquire(options);
      if (maxHoldMs === undefined) return waitForTurn(this.#request(count), wait).then(this.#grant);
      const limited = limitHold(this.#core, maxHoldMs, this.#what);
      return waitForTurn(this.#request(count), wait).then((entry) => new PermitHandle(limited, entry, this.#what));
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** Takes `count` permits (default 1) if they are free right now and nobody waits ahead; null otherwise. Never waits. */
  async tryAcquire(options?: TryPermitOptions): Promise<PermitHandle | null> {
    const count = this.#checkCount(checkedObject(options, TRY_OPTIONS).count);
    const entry = await tryTurn(this.#request(count));
    return entry === null ? null : this.#grant(entry);
  }

  /** Runs `fn` holding `count` permits (default 1) and releases them afterwards, also when `fn` throws. Rejects as `acquire` does. */
  withPermit<T>(fn: (permit: PermitHandle) => Promise<T> | T, options?: PermitOptions): Promise<T> {
    return runHolding(fn, () => this.acquire(options));
  }

  /**
   * The semaphore's contenders as the server has them now, in queue order, each with the permits it
   * holds or asks for (`count`). Rejects with `LockTimeoutError` after `timeoutMs`, `signal.reason` on
   * abort, or the session's or backend's error.
   */
  participants(options?: ParticipantsOptions): Promise<Participant[]> {
    return listParticipants(this.#session, this.#core, this.name, options);
  }

  #request(count: number): QueueRequest {
    if (count === 1 && this.#one !== undefined) return this.#one;
    let request = this.#requests.get(count);
    if (request === undefined) {
      const entryKind = semaphoreKind(count, this.permits);
      request = {
        session: this.#session,
        core: this.#core,
        queue: this.name,
        kind: 'semaphore',
        entryKind,
        decide: this.#decide,
        what: this.#what,
        announceGrant: true,
      };
      this.#requests.set(count, request);
      if (count === 1) this.#one = request;
    }
    return request;
  }

  /** The count of a grant is in its entry's kind (see `PermitHandle.count`). */
  readonly #grant = (entry: Entry): PermitHandle => new PermitHandle(this.#core, entry, this.#what);

  #checkAcquire(options: unknown): { count: number; wait: WaitOptions; maxHoldMs?: number | undefined } {
    if (options === undefined) return DEFAULT_ACQUIRE;
    const { count, timeoutMs, signal, maxHoldMs, holdWarningMs } = checkedObject(options, ACQUIRE_OPTIONS);
    return {
      count: this.#checkCount(count),
      wait: {
        timeoutMs: validateTimeout(timeoutMs),
        signal: validateSignal(signal),
        holdWarningMs: validateTimeout(holdWarningMs, 'holdWarningMs'),
      },
      maxHoldMs: validateMaxHold(maxHoldMs),
    };
  }

  #checkCount(count: unknown): number {
    if (count === undefined) return 1;
    if (typeof count !== 'number' || !Number.isInteger(count) || count < 1 || count > this.permits) {
      throw new InvalidArgumentError('count', count, `an integer from 1 to the semaphore's permits (${this.permits})`);
    }
    return count;
  }
}

const ACQUIRE_OPTIONS = ['count', 'timeoutMs', 'signal', 'maxHoldMs', 'holdWarningMs'];
const DEFAULT_ACQUIRE = { count: 1, wait: {} };
const TRY_OPTIONS = ['count'];

/** The options object (or none) with only `known` keys. */
function checkedObject(options: unknown, known: readonly string[]): Record<string, unknown> {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError('options', options, `an object with ${quoted(known)}`);
  }
  checkOptionKeys(options, known);
  return options as Record<string, unknown>;
}

function validatePermits(options: unknown): number {
  if (options === undefined)
    throw new InvalidArgumentError('options', options, 'an object with "permits" (how many permits the semaphore has)');
  const { permits } = checkedObject(options, ['permits']);
  if (typeof permits !== 'number' || !Number.isInteger(permits) || permits < 1 || permits > MAX_PERMITS) {
    throw new InvalidArgumentError('permits', permits, `an integer from 1 to ${MAX_PERMITS}`);
  }
  return permits;
}

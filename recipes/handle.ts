import type { Entry, Hold, SessionCore } from './contract.js';
import { EntryGoneError, HoldLimitError, LockLostError } from './errors.js';
import { GuardedValues } from './guarded.js';
import { type ReportedHold, reportHold, takeHoldWarning } from './report.js';
import { type TracedHold, traceHold } from './trace.js';

const LOSE = Symbol('lose');
const RELEASING = Symbol('releasing');

/**
 * What the session keeps of a handle: one small object per grant (an object literal with a getter and
 * closures costs several allocations on every grant).
 */
class HandleHold implements Hold {
  constructor(
    readonly entry: Entry,
    private readonly handle: LockHandle,
  ) {}

  lose(reason: Error): void {
    this.handle[LOSE](reason);
  }

  release(): Promise<void> {
    return this.handle.release();
  }

  get releasing(): boolean {
    return this.handle[RELEASING];
  }
}

/** Reads a handle's entry: assigned in LockHandle's static block, the one place that sees `#entry`. */
let readEntry: (handle: LockHandle) => Entry;

/**
 * The server entry behind a handle, for the recipes (a downgrade takes its writer's place) and tests;
 * a function rather than a member, so that it is no part of the public API.
 */
export function entryOf(handle: LockHandle): Entry {
  return readEntry(handle);
}

/**
 * A granted lock (or leadership). Its `signal` aborts with `LockLostError` as soon as ownership can
 * no longer be guaranteed. `release()` is idempotent; local ownership ends only after the server has
 * confirmed the delete (or the session, and with it the entry, is gone). `await using` releases it at
 * the end of the block.
 */
export class LockHandle implements AsyncDisposable {
  /** The lock name, as validated (`payments/settlement`). */
  readonly name: string;
  /**
   * Strictly increases across successive holders of this lock name, even if its queue is re-created,
   * and fits a signed 64-bit integer (ZooKeeper: the entry's creation zxid; etcd: the key's create
   * revision; PostgreSQL and Redis: the lock's own counter; memory: a store-wide counter). Pass it with
   * every write to the resource you protect and have the resource refuse a token below the highest it
   * accepted: a holder that lost the lock without knowing (a long pause) is then refused.
   */
  readonly fencingToken: bigint;
  readonly #entry: Entry;
  readonly #session: SessionCore;
  /** Made when `signal` is first read: most holders never look, and it is the costliest part of a grant. */
  #controller: AbortController | undefined;
  #lost: LockLostError | undefined;
  readonly #unhold: () => void;
  /** For messages: `lock "payments/settlement"`. */
  readonly #what: string;
  #released: Promise<void> | undefined;
  /** Told to the session's 'lock' listeners, if its grant was. */
  readonly #report: ReportedHold | undefined;
  /** Told on the hold channels (trace.ts), if its grant was. */
  readonly #trace: TracedHold | undefined;
  /** The `holdWarningMs` timer, while it runs. */
  #warning: ReturnType<typeof setTimeout> | undefined;
  #guarded: GuardedValues | undefined;

  static {
    readEntry = (handle) => handle.#entry;
  }

  /** @internal Made by the recipes on a grant, never by users. */
  constructor(session: SessionCore, entry: Entry, what: string) {
    this.#session = session;
    this.#entry = entry;
    this.name = entry.queue;
    this.fencingToken = entry.fencingToken;
    // Before hold(): a grant past the session's deadline is lost inside it.
    this.#report = reportHold(session, entry);
    this.#trace = traceHold(entry);
    this.#warnAfter(takeHoldWarning(entry));
    this.#what = what;
    this.#unhold = session.hold(new HandleHold(entry, this));
  }

  /** Sets the `holdWarningMs` timer, when someone hears it; it does not keep the process alive. */
  #warnAfter(ms: number | undefined): void {
    if (ms === undefined || (this.#report === undefined && this.#trace === undefined)) return;
    this.#warning = setTimeout(() => {
      this.#warning = undefined;
      this.#report?.heldTooLong();
      this.#trace?.heldTooLong();
    }, ms);
    this.#warning.unref();
  }

  /** @internal Ownership is in doubt (see `Hold.lose`). */
  [LOSE](reason: Error): void {
    clearTimeout(this.#warning);
    // A hold limit's error is the reason as it stands: its message says why the hold ended.
    this.#lost ??=
      reason instanceof HoldLimitError
        ? reason
        : new LockLostError(this.#what, {
            cause: reason,
            reason: reason instanceof EntryGoneError ? 'revoked' : 'session',
          });
    this.#controller?.abort(this.#lost);
    // A holder already giving the lock back is releasing, not losing it.
    if (this.#released === undefined) {
      this.#report?.lost(this.#lost);
      this.#trace?.lost(this.#lost);
    }
  }

  /** @internal Whether `release()` has been called (and not failed). */
  get [RELEASING](): boolean {
    return this.#released !== undefined;
  }

  /**
   * Aborts with `LockLostError` as soon as ownership can no longer be guaranteed: the session was lost
   * or closed, or the entry was deleted by someone else (its `cause` says which). Pass it to the work
   * done under the lock. A `release()` does not abort it.
   */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#lost !== undefined) this.#controller.abort(this.#lost);
    }
    return this.#controller.signal;
  }

  /**
   * True until released or lost. Unlike `signal.aborted`, which changes only when the event loop runs
   * the session's deadline timer, this reads the clock: after a stall (a long GC, a synchronous task)
   * it is already false if the session's deadline passed meanwhile. Check it right before acting.
   */
  get held(): boolean {
    if (this.#lost === undefined) this.#session.checkDeadline();
    return this.#released === undefined && this.#lost === undefined;
  }

  /**
   * Gives the lock back: resolves once the server has deleted the entry (or the session, and with it
   * the entry, is gone). Idempotent: later calls return the same promise. Rejects with the backend's
   * error (`BackendError`, `AccessDeniedError`) if the delete could not be made; a later call tries again.
   */
  release(): Promise<void> {
    this.#released ??= this.#session.backend.withdraw(this.#entry).then(
      () => {
        clearTimeout(this.#warning);
        this.#unhold();
        this.#report?.released();
        this.#trace?.released();
      },
      (error: unknown) => {
        // Not released: the next call may try again.
        this.#released = undefined;
        throw error;
      },
    );
    return this.#released;
  }

  /**
   * Values kept next to this lock on its own store, written only while this holder's entry exists
   * there (`await lock.guarded.put('last-period', '2026-11')`): see `GuardedValues`.
   */
  get guarded(): GuardedValues {
    this.#guarded ??= new GuardedValues({
      core: this.#session,
      entry: this.#entry,
      what: this.#what,
      assertHeld: () => {
        if (this.held) return;
        throw this.#lost ?? new LockLostError(this.#what, { cause: new Error('the lock was released') });
      },
    });
    return this.#guarded;
  }

  /** `release()`, for `await using lock = await mutex.acquire()`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

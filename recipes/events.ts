/**
 * What a session tells its `'lock'` listeners about the locks, read/write locks and candidacies taken
 * through it. Every wait is a story that starts with `requested` and ends with exactly one of
 * `granted`, `busy`, `timedOut`, `aborted` or `failed`; every `granted` hold ends with exactly one of
 * `released` or `lost`. A story is told only if someone listened when it began (a wait that started
 * before the first listener was attached reports nothing, not even its end), so a listener never sees
 * an end without its beginning. Times are milliseconds measured with `performance.now()`.
 */

/**
 * The entry kind: `lock` (FairMutex, and each lock of a MultiLock), `read` and `write`
 * (ReadWriteLock), `candidate` (LeaderElection), `semaphore` (Semaphore).
 */
export type LockKind = 'lock' | 'read' | 'write' | 'candidate' | 'semaphore';

/** What every lock event says: which lock, and what kind of entry. */
export interface LockEventBase {
  /** The lock name, as validated (`payments/settlement`). */
  readonly name: string;
  /** `lock`, `read`, `write` or `candidate`. */
  readonly kind: LockKind;
}

/** An acquire, tryAcquire or campaign is about to queue (its arguments were fine, the session usable). */
export interface LockRequested extends LockEventBase {
  /** `'requested'`. */
  readonly type: 'requested';
}

/** The wait ended with the lock held; `waitMs` counts from the call (a tryAcquire's round trip). */
export interface LockGranted extends LockEventBase {
  /** `'granted'`. */
  readonly type: 'granted';
  /** Milliseconds from the call to the grant. */
  readonly waitMs: number;
  /** The granted handle's `fencingToken`. */
  readonly fencingToken: bigint;
}

/** A tryAcquire found the lock taken and withdrew at once. */
export interface LockBusy extends LockEventBase {
  /** `'busy'`. */
  readonly type: 'busy';
  /** Milliseconds from the call to the answer. */
  readonly waitMs: number;
}

/** The wait ran out of time (`LockTimeoutError`); the waiter's entry was withdrawn. */
export interface LockTimedOut extends LockEventBase {
  /** `'timedOut'`. */
  readonly type: 'timedOut';
  /** Milliseconds from the call to the give-up. */
  readonly waitMs: number;
}

/** The caller's signal aborted the wait; `reason` is the signal's reason; the entry was withdrawn. */
export interface LockAborted extends LockEventBase {
  /** `'aborted'`. */
  readonly type: 'aborted';
  /** Milliseconds from the call to the give-up. */
  readonly waitMs: number;
  /** The caller's signal's `reason` (what the acquire rejected with). */
  readonly reason: unknown;
}

/**
 * The wait ended with any other error: the session was lost or closed, the entry vanished with
 * `onWaiterLost: 'fail'`, or the backend failed. `error` is what the acquire rejected with.
 */
export interface LockFailed extends LockEventBase {
  /** `'failed'`. */
  readonly type: 'failed';
  /** Milliseconds from the call to the failure. */
  readonly waitMs: number;
  /** What the acquire rejected with. */
  readonly error: unknown;
}

/** The holder gave the lock back and the server confirmed it (a release or resign). */
export interface LockReleased extends LockEventBase {
  /** `'released'`. */
  readonly type: 'released';
  /** Milliseconds from the grant to the confirmed release. */
  readonly holdMs: number;
  /** The released handle's `fencingToken`. */
  readonly fencingToken: bigint;
}

/**
 * Ownership ended while the holder still held: the session was lost or closed, or the entry was
 * deleted by someone else. `reason` is the `LockLostError` the handle's signal aborts with (its
 * `cause` says why). A hold that was already being released when this happened reports `released`.
 */
export interface LockLost extends LockEventBase {
  /** `'lost'`. */
  readonly type: 'lost';
  /** Milliseconds from the grant to the loss. */
  readonly holdMs: number;
  /** The lost handle's `fencingToken`. */
  readonly fencingToken: bigint;
  /** The `LockLostError` the handle's signal aborted with. */
  readonly reason: Error;
  /** True when the entry was deleted by another session while this one lived (`forceRelease`). */
  readonly revoked: boolean;
}

/**
 * Told on the revoker's session: `forceRelease` deleted another session's entry. The holder's own
 * session tells `lost` with `revoked: true` once it notices.
 */
export interface LockRevoked extends LockEventBase {
  /** `'revoked'`. */
  readonly type: 'revoked';
  /** The entry's key, as `participants()` shows it. */
  readonly key: string;
  /** The session that owned the entry. */
  readonly owner: string;
  /** The id of the session that revoked it (this one). */
  readonly revokedBy: string;
  /** The revoked entry's fencing token. */
  readonly fencingToken: bigint;
}

/**
 * A hold passed the `holdWarningMs` its acquire asked for and is still held: told once, between its
 * `granted` and its end, so that a stuck holder is seen before anyone pages.
 */
export interface LockHeldTooLong extends LockEventBase {
  /** `'heldTooLong'`. */
  readonly type: 'heldTooLong';
  /** Milliseconds from the grant to now. */
  readonly holdMs: number;
  /** The held handle's `fencingToken`. */
  readonly fencingToken: bigint;
}

/**
 * What a session's `'lock'` listeners receive, told apart by `type`: every wait starts with
 * `requested` and ends with one of `granted`, `busy`, `timedOut`, `aborted`, `failed`; every grant ends
 * with `released` or `lost`; `revoked` stands alone (the revoker's side of a force release).
 */
export type LockEvent =
  | LockRequested
  | LockGranted
  | LockBusy
  | LockTimedOut
  | LockAborted
  | LockFailed
  | LockReleased
  | LockLost
  | LockRevoked
  | LockHeldTooLong;

/** A listener of the session's `'lock'` event (`session.on('lock', listener)`). */
export type LockListener = (event: LockEvent) => void;

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

interface About {
  /** The lock name, as validated (`payments/settlement`). */
  readonly name: string;
  readonly kind: LockKind;
}

/** An acquire, tryAcquire or campaign is about to queue (its arguments were fine, the session usable). */
export interface LockRequested extends About {
  readonly type: 'requested';
}

/** The wait ended with the lock held; `waitMs` counts from the call (a tryAcquire's round trip). */
export interface LockGranted extends About {
  readonly type: 'granted';
  readonly waitMs: number;
  readonly fencingToken: bigint;
}

/** A tryAcquire found the lock taken and withdrew at once. */
export interface LockBusy extends About {
  readonly type: 'busy';
  readonly waitMs: number;
}

/** The wait ran out of time (`LockTimeoutError`); the waiter's entry was withdrawn. */
export interface LockTimedOut extends About {
  readonly type: 'timedOut';
  readonly waitMs: number;
}

/** The caller's signal aborted the wait; `reason` is the signal's reason; the entry was withdrawn. */
export interface LockAborted extends About {
  readonly type: 'aborted';
  readonly waitMs: number;
  readonly reason: unknown;
}

/**
 * The wait ended with any other error: the session was lost or closed, the entry vanished with
 * `onWaiterLost: 'fail'`, or the backend failed. `error` is what the acquire rejected with.
 */
export interface LockFailed extends About {
  readonly type: 'failed';
  readonly waitMs: number;
  readonly error: unknown;
}

/** The holder gave the lock back and the server confirmed it (a release or resign). */
export interface LockReleased extends About {
  readonly type: 'released';
  readonly holdMs: number;
  readonly fencingToken: bigint;
}

/**
 * Ownership ended while the holder still held: the session was lost or closed, or the entry was
 * deleted by someone else. `reason` is the `LockLostError` the handle's signal aborts with (its
 * `cause` says why). A hold that was already being released when this happened reports `released`.
 */
export interface LockLost extends About {
  readonly type: 'lost';
  readonly holdMs: number;
  readonly fencingToken: bigint;
  readonly reason: Error;
}

export type LockEvent = LockRequested | LockGranted | LockBusy | LockTimedOut | LockAborted | LockFailed | LockReleased | LockLost;

export type LockListener = (event: LockEvent) => void;

/**
 * The base of every error baton throws (`error instanceof BatonError`); `code` tells them apart. The
 * error classes are the recipes' language: backends map their client failures onto them, by
 * code or class, never by message text. Every error has a stable `code` for programs and a message
 * for people; `cause` carries the underlying failure where there is one.
 */
export class BatonError extends Error {
  /**
   * Stable for programs to test (the message is for people): `LOCK_TIMEOUT`, `LOCK_LOST`,
   * `SESSION_LOST`, `INVALID_NAME`, `INVALID_ARGUMENT`, `NOT_HELD`, `LOCK_UPGRADE`, `LOCK_DOWNGRADE`,
   * `CLOSED`, `ACCESS_DENIED`, `BACKEND_ERROR`, `STALE_TOKEN`, `UNKNOWN_ENTRY`.
   */
  readonly code: string;

  /** `code` defaults to `BATON_ERROR`; `options.cause` becomes the error's `cause`. */
  constructor(message: string, code = 'BATON_ERROR', options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }

  /** The class name (`LockTimeoutError`), as stack traces and `util.inspect` show it. */
  override get name(): string {
    return this.constructor.name;
  }
}

/**
 * Code `LOCK_TIMEOUT`: the wait for a lock or leadership ran out of its `timeoutMs`; the waiter's entry
 * was withdrawn. Thrown by `acquire`, `withLock`, `campaign` and `downgrade`.
 */
export class LockTimeoutError extends BatonError {
  /** The `timeoutMs` the wait was given. */
  readonly timeoutMs: number;

  /** `what`: the thing waited for, for the message (`lock "a/b"`). */
  constructor(what: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}`, 'LOCK_TIMEOUT', options);
    this.timeoutMs = timeoutMs;
  }
}

/**
 * Why a hold ended without its holder's release: `session` (the session was lost or closed, or its
 * entry vanished with it), `revoked` (the entry was deleted while the session lived: an operator's
 * `forceRelease`, or any other client's delete), `hold-limit` (its `maxHoldMs` passed).
 */
export type LossReason = 'session' | 'revoked' | 'hold-limit';

/**
 * Code `LOCK_LOST`: ownership can no longer be guaranteed: the session was lost or closed, or the
 * entry was deleted by someone else (`reason` says which, `cause` what was seen). The reason a handle's
 * `signal` aborts with; also thrown by an acquire whose entry vanished with `onWaiterLost: 'fail'`.
 */
export class LockLostError extends BatonError {
  /** Why the hold ended: `session`, `revoked` (deleted by another session) or `hold-limit`. */
  readonly reason: LossReason;

  /** `what`: the thing that was held, for the message (`lock "a/b"`); `reason` defaults to `session`. */
  constructor(what: string, options?: { cause?: unknown; reason?: LossReason }) {
    const reason = options?.reason ?? 'session';
    super(
      reason === 'revoked'
        ? `${what} was revoked: its entry was deleted by another session (a force release)`
        : `${what} is no longer held: ownership cannot be guaranteed`,
      'LOCK_LOST',
      options,
    );
    this.reason = reason;
  }
}

/**
 * Code `LOCK_LOST` (a loss like any other, so code that handles `LOCK_LOST` handles it too): the hold
 * lasted longer than the `maxHoldMs` it was acquired with, so baton aborted the holder's signal with
 * this error and withdrew its entry, whatever the holder's code was doing. Tell it apart from other
 * losses with `instanceof HoldLimitError`. baton's client times the limit (see docs/recipes.md).
 */
export class HoldLimitError extends LockLostError {
  /** The `maxHoldMs` the hold was acquired with. */
  readonly maxHoldMs: number;

  /** `what`: the thing that was held, for the message (`lock "a/b"`). */
  constructor(what: string, maxHoldMs: number) {
    super(what, { reason: 'hold-limit' });
    this.message = `${what} was held longer than its maxHoldMs (${maxHoldMs} ms): its entry was withdrawn`;
    this.maxHoldMs = maxHoldMs;
  }
}

/**
 * Code `SESSION_LOST`: the session expired on the server, or its deadline (session timeout minus the
 * margin) passed before the server was heard again. Final: open a new session. The reason the
 * session's `signal` aborts with; thrown by anything started on a lost session.
 */
export class SessionLostError extends BatonError {
  /** `message` defaults to `the session was lost`; `options.cause`: why. */
  constructor(message = 'the session was lost', options?: { cause?: unknown }) {
    super(message, 'SESSION_LOST', options);
  }
}

/**
 * @internal The cause of a hold's loss when its entry is gone from the server while its session lives
 * (a force release, another client's delete): the handle's `LockLostError` then has reason `revoked`.
 * A `SessionLostError` as such causes always were, so that code testing the cause's class still works.
 */
export class EntryGoneError extends SessionLostError {
  /** `key`: the entry that is gone. */
  constructor(key: string) {
    super(`entry ${key} is gone from the server while the session lives`);
  }
}

/**
 * Code `INVALID_NAME`: a lock name the rules reject (segments of `A-Za-z0-9._-` separated by `/`, at
 * most 256 characters); thrown by the recipe constructors before anything reaches the server.
 */
export class InvalidNameError extends BatonError {
  /** The name that was given. */
  readonly value: unknown;

  /** `reason`: which rule the name breaks, for the message. */
  constructor(value: unknown, reason: string) {
    super(`invalid name ${describe(value)}: ${reason}`, 'INVALID_NAME');
    this.value = value;
  }
}

/**
 * Code `INVALID_ARGUMENT`: an option or argument of the wrong type or range, or an unknown option key
 * (the message names the nearest valid one); thrown before anything reaches the server.
 */
export class InvalidArgumentError extends BatonError {
  /** The value that was given (secrets are replaced by a description). */
  readonly value: unknown;

  /** `what`: the argument; `allowed`: what it may be, for the message. */
  constructor(what: string, value: unknown, allowed: string) {
    super(`invalid ${what} ${describe(value)}: expected ${allowed}`, 'INVALID_ARGUMENT');
    this.value = value;
  }
}

/**
 * Code `UNKNOWN_ENTRY`: `forceRelease` was given a key that is no entry of the named queue (never was,
 * or already gone): nothing was removed. The keys are those `participants()` and `baton inspect` show.
 */
export class UnknownEntryError extends BatonError {
  /** The lock name. */
  readonly lockName: string;
  /** The key that was asked for. */
  readonly key: string;

  /** `name`: the lock; `key`: the entry asked for. */
  constructor(name: string, key: string) {
    super(`no entry ${JSON.stringify(key)} in the queue of "${name}"`, 'UNKNOWN_ENTRY');
    this.lockName = name;
    this.key = key;
  }
}

/**
 * Code `NOT_HELD`: a release of something this caller does not hold (a `Reentrant` owner releasing more
 * levels than it acquired).
 */
export class NotHeldError extends BatonError {
  /** The whole message. */
  constructor(message: string) {
    super(message, 'NOT_HELD');
  }
}

/**
 * Code `LOCK_UPGRADE`: a read lock holder asked for the write lock of the same ReadWriteLock (or
 * `Reentrant` owner): that would wait for itself. Release the read lock first.
 */
export class LockUpgradeError extends BatonError {
  /** `what`: the read/write lock, for the message. */
  constructor(what: string) {
    super(
      `cannot upgrade ${what}: this owner holds its read lock; release it first (upgrading would deadlock)`,
      'LOCK_UPGRADE',
    );
  }
}

/**
 * Code `LOCK_DOWNGRADE`: a downgrade of a write lock that could not be made safely; the write lock is still held. Refused
 * on etcd when a client that does not see baton's read entries (etcd's Go recipes) queued behind it.
 */
export class LockDowngradeError extends BatonError {
  /** `what`: the read/write lock; `why`: what prevents the downgrade. */
  constructor(what: string, why: string) {
    super(`cannot downgrade ${what}: ${why}; the write lock is still held`, 'LOCK_DOWNGRADE');
  }
}

/**
 * Code `PERMITS_MISMATCH`: a semaphore found an entry ahead of its own made with other permits (`found` is that number), or an
 * entry of another recipe on its name (`found` is that entry's kind): every participant of one
 * semaphore must give the same `permits`, and a semaphore's name is its own. The waiter's entry was
 * withdrawn.
 */
export class PermitsMismatchError extends BatonError {
  /** The permits this semaphore was asked for with. */
  readonly permits: number;
  /** The permits of the entry found, or the kind of another recipe's entry. */
  readonly found: number | string;

  /** `what` names the semaphore (`semaphore "jobs"`). */
  constructor(what: string, permits: number, found: number | string) {
    const other =
      typeof found === 'number'
        ? `an entry made with permits ${found}`
        : `an entry of another recipe (kind "${found}")`;
    const rule =
      typeof found === 'number'
        ? 'every participant must give the same permits'
        : "a semaphore's name must not be shared with other recipes";
    super(`${what} was asked for with permits ${permits}, but its queue holds ${other}: ${rule}`, 'PERMITS_MISMATCH');
    this.permits = permits;
    this.found = found;
  }
}

/**
 * Code `CLOSED`: the session was closed by its owner (`session.close()`); nothing more can be started
 * on it, and waits on it give up with this error.
 */
export class ClosedError extends BatonError {
  /** `message` defaults to `the session is closed`. */
  constructor(message = 'the session is closed') {
    super(message, 'CLOSED');
  }
}

/**
 * Code `ACCESS_DENIED`: the server refused the request: the session's credentials do not allow it (ZooKeeper NoAuth, etcd
 * permission denied). Retrying does not help; the message never includes the credentials.
 */
export class AccessDeniedError extends BatonError {
  /** `options.cause`: the client's own error. */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 'ACCESS_DENIED', options);
  }
}

/**
 * Code `BACKEND_ERROR`: the backend failed in a way the recipes cannot repair (a server error, an
 * unexpected reply); `cause` holds the client's error.
 */
export class BackendError extends BatonError {
  /** `options.cause`: the client's own error. */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 'BACKEND_ERROR', options);
  }
}

/**
 * Code `STALE_TOKEN`: a fence (`baton-locks/fence`) refused a write because its fencing token is below
 * the highest token the resource has accepted: the writer's lock was taken over by a newer holder. The
 * write was not made. Thrown the same way by every store's fence.
 */
export class StaleTokenError extends BatonError {
  /** The fenced resource (a name in the PostgreSQL table, a Redis fence's resource, a compare-and-set key). */
  readonly resource: string;
  /** The token the write came with. */
  readonly token: bigint;
  /** The resource's mark when the write was refused: the highest token it has accepted. */
  readonly mark: bigint;

  /** `options.cause`: the store's own error, if it reported one (PostgreSQL's SQLSTATE error). */
  constructor(resource: string, token: bigint, mark: bigint, options?: { cause?: unknown }) {
    super(
      `stale fencing token ${token} for ${JSON.stringify(resource)}: the resource has accepted token ${mark}; the write was refused`,
      'STALE_TOKEN',
      options,
    );
    this.resource = resource;
    this.token = token;
    this.mark = mark;
  }
}

function describe(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) {
    return String(value);
  }
  return `of type ${Array.isArray(value) ? 'array' : typeof value}`;
}

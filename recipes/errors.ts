/**
 * The error classes are the recipes' language: backends map their client failures onto them, by
 * code or class, never by message text. Every error has a stable `code` for programs and a message
 * for people; `cause` carries the underlying failure where there is one.
 */
export class BatonError extends Error {
  readonly code: string;

  constructor(message: string, code = 'BATON_ERROR', options?: { cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }

  override get name(): string {
    return this.constructor.name;
  }
}

/** The wait for a lock or leadership ran out of time; the waiter's entry was withdrawn. */
export class LockTimeoutError extends BatonError {
  readonly timeoutMs: number;

  constructor(what: string, timeoutMs: number, options?: { cause?: unknown }) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}`, 'LOCK_TIMEOUT', options);
    this.timeoutMs = timeoutMs;
  }
}

/** Ownership can no longer be guaranteed: the session was lost or closed, or the entry vanished. */
export class LockLostError extends BatonError {
  constructor(what: string, options?: { cause?: unknown }) {
    super(`${what} is no longer held: ownership cannot be guaranteed`, 'LOCK_LOST', options);
  }
}

/** The session expired, or the client-side deadline passed before the server was heard again. */
export class SessionLostError extends BatonError {
  constructor(message = 'the session was lost', options?: { cause?: unknown }) {
    super(message, 'SESSION_LOST', options);
  }
}

/** A lock name that the rules reject; thrown before anything reaches the server. */
export class InvalidNameError extends BatonError {
  readonly value: unknown;

  constructor(value: unknown, reason: string) {
    super(`invalid name ${describe(value)}: ${reason}`, 'INVALID_NAME');
    this.value = value;
  }
}

/** An option or argument of the wrong type or range; thrown before anything reaches the server. */
export class InvalidArgumentError extends BatonError {
  readonly value: unknown;

  constructor(what: string, value: unknown, allowed: string) {
    super(`invalid ${what} ${describe(value)}: expected ${allowed}`, 'INVALID_ARGUMENT');
    this.value = value;
  }
}

/** A release or resign of something this caller does not hold (wrong session, too many releases). */
export class NotHeldError extends BatonError {
  constructor(message: string) {
    super(message, 'NOT_HELD');
  }
}

/** A read lock holder asked for the write lock of the same ReadWriteLock: that would wait for itself. */
export class LockUpgradeError extends BatonError {
  constructor(what: string) {
    super(`cannot upgrade ${what}: this owner holds its read lock; release it first (upgrading would deadlock)`, 'LOCK_UPGRADE');
  }
}

/**
 * A downgrade of a write lock that could not be made safely; the write lock is still held. Refused
 * on etcd when a client that does not see baton's read entries (etcd's Go recipes) queued behind it.
 */
export class LockDowngradeError extends BatonError {
  constructor(what: string, why: string) {
    super(`cannot downgrade ${what}: ${why}; the write lock is still held`, 'LOCK_DOWNGRADE');
  }
}

/**
 * A semaphore found an entry ahead of its own made with other permits (`found` is that number), or an
 * entry of another recipe on its name (`found` is that entry's kind): every participant of one
 * semaphore must give the same `permits`, and a semaphore's name is its own. The waiter's entry was
 * withdrawn.
 */
export class PermitsMismatchError extends BatonError {
  readonly permits: number;
  readonly found: number | string;

  constructor(what: string, permits: number, found: number | string) {
    const other = typeof found === 'number' ? `an entry made with permits ${found}` : `an entry of another recipe (kind "${found}")`;
    const rule = typeof found === 'number' ? 'every participant must give the same permits' : "a semaphore's name must not be shared with other recipes";
    super(`${what} was asked for with permits ${permits}, but its queue holds ${other}: ${rule}`, 'PERMITS_MISMATCH');
    this.permits = permits;
    this.found = found;
  }
}

/** The session was closed by its owner; nothing more can be started on it. */
export class ClosedError extends BatonError {
  constructor(message = 'the session is closed') {
    super(message, 'CLOSED');
  }
}

/**
 * The server refused the request: the session's credentials do not allow it (ZooKeeper NoAuth, etcd
 * permission denied). Retrying does not help; the message never includes the credentials.
 */
export class AccessDeniedError extends BatonError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 'ACCESS_DENIED', options);
  }
}

/** The backend failed in a way the recipes cannot repair (a server error, an unexpected reply). */
export class BackendError extends BatonError {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, 'BACKEND_ERROR', options);
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

/**
 * Guarded values: small values a holder keeps next to its lock on the lock's own store (the last
 * settled period, a leader's published config), written only while the holder's entry still exists
 * there. The check and the write are one atomic step on the server (an etcd Txn, a ZooKeeper multi, a
 * Redis script, one SQL statement), so a holder that lost its lock without knowing it (a long pause,
 * a partition) has its late write refused by the store itself.
 */
import { type Entry, type GuardedClient, type GuardedOp, type SessionCore, untilAborted } from './contract.js';
import { deadline } from './deadline.js';
import { BatonError, InvalidArgumentError, InvalidNameError, LockLostError, SessionLostError } from './errors.js';
import { type RequestOptions, validateRequestOptions } from './validate.js';

/** The longest value name: a name is one path segment on every store. */
export const MAX_VALUE_NAME_LENGTH = 128;
/**
 * The largest value, in UTF-8 bytes: one bound for every backend, under the smallest request limit
 * with room for the rest of the request (ZooKeeper's 1 MB jute.maxbuffer for the whole multi, etcd's
 * 1.5 MiB request limit; Redis and PostgreSQL accept far more).
 */
export const MAX_VALUE_BYTES = 512 * 1024;

const VALUE_NAME = /^[A-Za-z0-9._-]+$/;
const OPTIONS = ['signal', 'timeoutMs'];
const UTF8 = new TextEncoder();

/** Options of a guarded call: how long it may take. A write given up (timeout or signal) may still be applied. */
export type GuardedOptions = RequestOptions;

/** What a handle lends its guarded values: the session, its entry, and whether it still holds. */
export interface GuardedOwner {
  readonly core: SessionCore;
  readonly entry: Entry;
  /** For messages: `lock "payments/settlement"`. */
  readonly what: string;
  /** Throws `LockLostError` if the handle was released or lost: nothing is sent then. */
  assertHeld(): void;
}

/**
 * The values kept next to a held lock (`lock.guarded`). `put` and `delete` commit only while this
 * holder's entry exists on the store: once it is gone (the session expired, the entry was deleted, the
 * lock released) they reject with `LockLostError` and write nothing. The values belong to the lock
 * name, not to the holder: the next holder reads what the last one wrote; they stay until deleted.
 */
export class GuardedValues {
  readonly #owner: GuardedOwner;

  /** @internal Made by a handle, never by users. */
  constructor(owner: GuardedOwner) {
    this.#owner = owner;
  }

  /**
   * Stores `value` under `name` next to the lock, only if this holder still holds it (checked by the
   * store in the same atomic step). Rejects with `LockLostError` (nothing written) once it does not.
   */
  async put(name: string, value: string, options?: GuardedOptions): Promise<void> {
    const checkedName = validateValueName(name);
    await this.#write({ type: 'put', name: checkedName, value: validateValue(value) }, options);
  }

  /** Deletes `name` (nothing if absent), only if this holder still holds the lock; else `LockLostError`. */
  async delete(name: string, options?: GuardedOptions): Promise<void> {
    await this.#write({ type: 'delete', name: validateValueName(name) }, options);
  }

  /**
   * The value stored under `name`, or null. A plain read, not guarded: it returns the last committed
   * value whether or not this holder still holds the lock (only writes need the guard).
   */
  async get(name: string, options?: GuardedOptions): Promise<string | null> {
    const checkedName = validateValueName(name);
    const { core, entry, what } = this.#owner;
    return this.#bounded(`guarded read of "${checkedName}" on ${what}`, options, () =>
      core.backend.guardedRead(entry.queue, checkedName),
    );
  }

  /**
   * PostgreSQL only: runs `work` on `client` (your `pg.Client`, or a client from `pool.connect()`, on
   * the lock's database) in a transaction that commits only if this holder still holds the lock at
   * COMMIT; while it is open no other holder can be granted. Resolves with what `work` returns; rejects
   * with `LockLostError` (rolled back) if the lock was lost, with `work`'s error (rolled back) if it
   * throws. `timeoutMs` bounds each statement and each pause between them on the server (default: the
   * session timeout); `signal` is checked before BEGIN and before COMMIT. Other backends reject with
   * `UnsupportedError`. docs/guarded-writes.md says what is guaranteed.
   */
  async transaction<T>(
    client: GuardedClient,
    work: (client: GuardedClient) => Promise<T>,
    options?: GuardedOptions,
  ): Promise<T> {
    const checked = checkSingleConnection(client);
    if (typeof work !== 'function') throw new InvalidArgumentError('work', work, 'an async function of the client');
    const { timeoutMs, signal } = validateRequestOptions(options, OPTIONS);
    const { core, entry, what } = this.#owner;
    const backend = core.backend;
    if (backend.guardedTransaction === undefined)
      throw new UnsupportedError('a guarded transaction needs an SQL backend (postgres://)');
    this.#owner.assertHeld();
    const leave = core.enter();
    const wait = deadline(`guarded transaction on ${what}`, undefined, [signal]);
    try {
      return await backend.guardedTransaction(entry, checked, work, { limitMs: timeoutMs, signal: wait.signal }, what);
    } finally {
      wait.dispose();
      leave();
    }
  }

  async #write(op: GuardedOp, options: GuardedOptions | undefined): Promise<void> {
    const { core, entry, what } = this.#owner;
    this.#owner.assertHeld();
    const applied = await this.#bounded(`guarded ${op.type} of "${op.name}" on ${what}`, options, () =>
      core.backend.guardedWrite(entry, op).catch((error: unknown) => {
        // The session ended under the write: the lock is lost (a write applied before that was applied while held).
        throw error instanceof SessionLostError ? new LockLostError(what, { cause: error }) : error;
      }),
    );
    if (!applied) throw new LockLostError(what, { cause: new Error(`the store refused the ${op.type}: entry gone`) });
  }

  /** Runs `request` within the caller's signal and timeout, and as an operation `close()` waits for. */
  async #bounded<T>(what: string, options: GuardedOptions | undefined, request: () => Promise<T>): Promise<T> {
    const { timeoutMs, signal } = validateRequestOptions(options, OPTIONS);
    const leave = this.#owner.core.enter();
    const wait = deadline(what, timeoutMs, [signal]);
    try {
      wait.signal.throwIfAborted();
      return await untilAborted(request(), wait.signal);
    } finally {
      wait.dispose();
      leave();
    }
  }
}

/**
 * Code `UNSUPPORTED`: the backend cannot do what was asked (a guarded transaction on a backend other
 * than PostgreSQL). Thrown before anything reaches the server.
 */
export class UnsupportedError extends BatonError {
  /** `message`: what is not supported, and where it is. */
  constructor(message: string) {
    super(message, 'UNSUPPORTED');
  }
}

/** A single connection: a pool (`totalCount`, `idleCount`) would run each statement on any of its connections. */
function checkSingleConnection(client: unknown): GuardedClient {
  const c = client as { query?: unknown; totalCount?: unknown; idleCount?: unknown } | null;
  if (typeof client !== 'object' || c === null || typeof c.query !== 'function')
    throw new InvalidArgumentError('client', client, 'a pg.Client or a client from pool.connect()');
  if (typeof c.totalCount === 'number' && typeof c.idleCount === 'number')
    throw new InvalidArgumentError('client', 'a pg.Pool', 'a single connection: a client from pool.connect()');
  return client as GuardedClient;
}

/** A value name: one segment of `A-Za-z0-9._-`, at most 128 characters, not `.` or `..`. */
export function validateValueName(name: unknown): string {
  if (typeof name !== 'string') throw new InvalidNameError(name, 'a value name must be a string');
  if (name.length === 0 || name.length > MAX_VALUE_NAME_LENGTH)
    throw new InvalidNameError(name, `a value name has 1 to ${MAX_VALUE_NAME_LENGTH} characters`);
  if (!VALUE_NAME.test(name) || name === '.' || name === '..')
    throw new InvalidNameError(name, 'a value name may contain only A-Z, a-z, 0-9, ".", "_" and "-" (not "." or "..")');
  return name;
}

function validateValue(value: unknown): string {
  if (typeof value !== 'string' || UTF8.encode(value).length > MAX_VALUE_BYTES)
    throw new InvalidArgumentError('value', value, `a string of at most ${MAX_VALUE_BYTES} bytes in UTF-8`);
  return value;
}

/**
 * The fence on any store with compare-and-set (a key-value store's conditional put, an object store's
 * If-Match, DynamoDB's condition expressions): the record carries its value and its mark together,
 * so the check and the write are one conditional write of that record.
 */
import { BackendError, InvalidArgumentError, StaleTokenError } from '../../recipes/errors.js';
import { checkOptionKeys, validateSignal } from '../../recipes/validate.js';
import { checkResource, checkToken } from './arguments.js';

/** A record as a compare-and-set store keeps it: the value, the mark that wrote it, and the store's version. */
export interface FencedRecord<V> {
  /** The user's value. */
  readonly value: V;
  /** The highest fencing token accepted for this record: the token of the write that made it. */
  readonly mark: bigint;
  /** The store's own version of the record (a revision, an ETag), opaque to the fence. */
  readonly version: string;
}

/**
 * The contract a store implements for `fencedWrite`. `compareAndSet` must be atomic on the store:
 * it writes `next` only if the record's version is still `version` (undefined: the key must be absent).
 */
export interface CompareAndSetStore<V> {
  /** The record at `key`, or undefined when there is none. */
  read(key: string): Promise<FencedRecord<V> | undefined>;
  /** Writes `next` if the record is still at `version`; false (and nothing written) if it changed. */
  compareAndSet(key: string, version: string | undefined, next: { value: V; mark: bigint }): Promise<boolean>;
}

/** Options of `fencedWrite`. */
export interface FencedWriteOptions {
  /** Give up when this signal aborts (rejects with `signal.reason`). Default: none. */
  readonly signal?: AbortSignal;
  /** How many conditional writes to try while other writers keep changing the record. Default 100. */
  readonly maxAttempts?: number;
}

/**
 * Writes `update(current)` at `key` if `token` is at least the record's mark (an equal token passes:
 * the same holder writing again), as one compare-and-set of value and mark together. Rejects with
 * `StaleTokenError` when the token is below the mark. A lost race (another write in between) reads
 * again, at most `maxAttempts` times (then `BackendError`). Resolves to the value written.
 */
export async function fencedWrite<V>(
  store: CompareAndSetStore<V>,
  key: string,
  token: bigint,
  update: (current: V | undefined) => V,
  options: FencedWriteOptions = {},
): Promise<V> {
  checkResource(key);
  checkToken(token);
  const { signal, maxAttempts } = checkWriteOptions(options);
  for (let attempt = 1; attempt <= maxAttempts; attempt += 1) {
    signal?.throwIfAborted();
    const current = await store.read(key);
    if (current !== undefined && token < current.mark) throw new StaleTokenError(key, token, current.mark);
    const value = update(current?.value);
    if (await store.compareAndSet(key, current?.version, { value, mark: token })) return value;
  }
  throw new BackendError(`the record ${JSON.stringify(key)} kept changing: ${maxAttempts} conditional writes lost`);
}

function checkWriteOptions(options: FencedWriteOptions): { signal: AbortSignal | undefined; maxAttempts: number } {
  checkOptionKeys(options, ['signal', 'maxAttempts']);
  const maxAttempts = options.maxAttempts ?? 100;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1 || maxAttempts > 1_000_000)
    throw new InvalidArgumentError('maxAttempts', maxAttempts, 'a whole number from 1 to 1000000');
  return { signal: validateSignal(options.signal), maxAttempts };
}

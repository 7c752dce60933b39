import { InvalidArgumentError, InvalidNameError } from './errors.js';

const SEGMENT = /^[A-Za-z0-9._-]+$/;
/** How ZooKeeper lock clients end their entries' names: a nested lock named so would read as an entry. */
const ENTRY_LIKE = /(?:lock-|latch-|__READ__|__WRIT__|__lock__|__rlock__)\d{10}$/;
export const MAX_NAME_LENGTH = 256;
/** setTimeout fires at once for anything larger, so larger timeouts are refused rather than shortened. */
export const MAX_TIMEOUT_MS = 2_147_483_647;

/**
 * A lock name is one or more `/`-separated segments of `[A-Za-z0-9._-]`. Segments may not be `.` or
 * `..`, may not start with `_c_` and may not end like a lock client's entry (`lock-0000000001`), which
 * would make a nested lock's directory look like a queue entry.
 */
export function validateName(name: unknown): string {
  if (typeof name !== 'string') throw new InvalidNameError(name, 'a name must be a string');
  if (name.length === 0) throw new InvalidNameError(name, 'a name must not be empty');
  if (name.length > MAX_NAME_LENGTH) {
    throw new InvalidNameError(name, `a name is at most ${MAX_NAME_LENGTH} characters (got ${name.length})`);
  }
  for (const segment of name.split('/')) {
    if (segment === '') {
      throw new InvalidNameError(name, 'empty path segment (leading, trailing or double "/")');
    }
    if (segment === '.' || segment === '..') throw new InvalidNameError(name, `segment "${segment}" is not allowed`);
    if (!SEGMENT.test(segment)) {
      throw new InvalidNameError(name, 'segments may contain only A-Z, a-z, 0-9, ".", "_" and "-"');
    }
    if (segment.startsWith('_c_')) throw new InvalidNameError(name, 'segments may not start with "_c_"');
    if (ENTRY_LIKE.test(segment))
      throw new InvalidNameError(name, `segment "${segment}" is named like a lock client's queue entry`);
  }
  return name;
}

/** How long a blocking call (acquire, withLock, campaign, downgrade) may wait. Unknown keys are refused. */
export interface WaitOptions {
  /**
   * Give up after this many milliseconds with `LockTimeoutError` (0: only if granted without waiting).
   * Default: no limit. A finite number from 0 to 2 147 483 647.
   */
  readonly timeoutMs?: number | undefined;
  /** Give up when this signal aborts; the promise rejects with `signal.reason`. Default: none. */
  readonly signal?: AbortSignal | undefined;
  /**
   * Once granted, tell a `heldTooLong` lock event (and the `baton-locks:hold:heldTooLong` channel, and
   * the metric) if the hold lasts longer than this many milliseconds. Default: no warning. Same range
   * as `timeoutMs`.
   */
  readonly holdWarningMs?: number | undefined;
}

const WAIT_OPTIONS = ['timeoutMs', 'signal', 'holdWarningMs'];

/** A wait's options, and how long the hold it grants may last (acquire, withLock, campaign, permits). */
export interface HoldOptions extends WaitOptions {
  /**
   * Once the hold has lasted this many milliseconds, its signal aborts with `HoldLimitError` and its
   * entry is withdrawn, even if the holder's code never returns. Timed by baton's client, from the
   * grant. Default: no limit. A whole number from 1 to 2 147 483 647.
   */
  readonly maxHoldMs?: number | undefined;
}

const HOLD_OPTIONS = [...WAIT_OPTIONS, 'maxHoldMs'];

export function validateHoldOptions(options: unknown): HoldOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError('options', options, 'an object such as { timeoutMs, signal, maxHoldMs }');
  }
  checkOptionKeys(options, HOLD_OPTIONS);
  const { maxHoldMs, ...wait } = options as Record<string, unknown>;
  const checked = validateWaitOptions(wait);
  const limit = validateMaxHold(maxHoldMs);
  return limit === undefined ? checked : { ...checked, maxHoldMs: limit };
}

export function validateMaxHold(value: unknown): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TIMEOUT_MS) {
    throw new InvalidArgumentError('maxHoldMs', value, `a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`);
  }
  return value;
}

export function validateWaitOptions(options: unknown): WaitOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError('options', options, 'an object such as { timeoutMs, signal }');
  }
  checkOptionKeys(options, WAIT_OPTIONS);
  const { timeoutMs, signal, holdWarningMs } = options as Record<string, unknown>;
  const checked = { timeoutMs: validateTimeout(timeoutMs), signal: validateSignal(signal) };
  const warning = validateTimeout(holdWarningMs, 'holdWarningMs');
  return warning === undefined ? checked : { ...checked, holdWarningMs: warning };
}

/**
 * How long a one-off request may take (a force release, a guarded call, a reading of the participants;
 * `runOnce`'s wait for its job's lock adds its own keys). Unknown keys are refused.
 */
export interface RequestOptions {
  /**
   * Give up after this many milliseconds with `LockTimeoutError`. Default: no limit. A finite number
   * from 0 to 2 147 483 647.
   */
  readonly timeoutMs?: number | undefined;
  /** Give up when this signal aborts; the promise rejects with `signal.reason`. Default: none. */
  readonly signal?: AbortSignal | undefined;
}

/**
 * The options of a one-off request (a force release, a guarded call): a timeout and a signal, nothing
 * else. `known` is the two keys in the order a refused key's message lists them.
 */
export function validateRequestOptions(options: unknown, known: readonly string[]): RequestOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw new InvalidArgumentError('options', options, 'an object such as { timeoutMs, signal }');
  checkOptionKeys(options, known);
  const { timeoutMs, signal } = options as Record<string, unknown>;
  return { timeoutMs: validateTimeout(timeoutMs), signal: validateSignal(signal) };
}

export function validateTimeout(value: unknown, what = 'timeoutMs'): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > MAX_TIMEOUT_MS) {
    throw new InvalidArgumentError(what, value, `a finite number of milliseconds from 0 to ${MAX_TIMEOUT_MS}`);
  }
  return value;
}

export function validateSignal(value: unknown): AbortSignal | undefined {
  if (value === undefined) return undefined;
  if (!(value instanceof AbortSignal)) throw new InvalidArgumentError('signal', value, 'an AbortSignal');
  return value;
}

/**
 * Throws `InvalidArgumentError` for a key of `options` that is none of `known` (a misspelled option
 * would otherwise be ignored: `{ timeout: 500 }` waiting for ever), naming the nearest known key.
 */
export function checkOptionKeys(options: object, known: readonly string[]): void {
  for (const key in options) {
    if (!Object.prototype.hasOwnProperty.call(options, key) || known.includes(key)) continue;
    const nearest = nearestOf(key, known);
    const hint = nearest === undefined ? '' : ` (did you mean "${nearest}"?)`;
    throw new InvalidArgumentError(
      `option "${key}"`,
      (options as Record<string, unknown>)[key],
      `one of the known options ${quoted(known)}${hint}`,
    );
  }
}

/** The known word closest to `word` by edit distance, if it is close enough to be a misspelling of it. */
function nearestOf(word: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Math.max(2, Math.floor(word.length / 3)) + 1;
  for (const candidate of known) {
    const distance = editDistance(word.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i += 1) {
    const current = [i];
    for (let j = 1; j <= b.length; j += 1)
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}

/** `"a", "b"`: values as a message lists them. */
export function quoted(values: readonly string[]): string {
  return values.map((value) => `"${value}"`).join(', ');
}

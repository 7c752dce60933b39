/**
 * At most once per period across every node that asks (ShedLock's job, done with a fair queue and a
 * guarded write): each caller takes the job's lock in turn; the first to find its period not yet done
 * runs the work and records the period with a guarded write, so that a holder that lost its lock
 * part-way cannot record it; the callers after it read the record and skip.
 */
import type { Session } from './contract.js';
import { InvalidArgumentError } from './errors.js';
import type { LockHandle } from './handle.js';
import { FairMutex } from './mutex.js';
import { checkOptionKeys, type RequestOptions, validateSignal, validateTimeout } from './validate.js';

/** The guarded value, next to the job's lock, that records the last period done (or claimed). */
export const ONCE_RECORD = 'baton-once';

/** The longest period: about 8,900 years in milliseconds, still exact as a number and as a Date. */
export const MAX_PERIOD_MS = 2 ** 48;

/** The last instant a Date can name (ECMAScript's limit). */
const MAX_DATE_MS = 8.64e15;

const OPTIONS = ['period', 'onFailure', 'at', 'timeoutMs', 'signal'];

/** What `runOnce` does with a period whose run failed or whose holder died part-way. */
export type OnceFailurePolicy = 'retry' | 'skip';

/**
 * Options of `runOnce`. Unknown keys are refused with `InvalidArgumentError`. `timeoutMs` and `signal`
 * bound the wait for the job's lock (a signal aborts that wait), not the work.
 */
export interface OnceOptions extends RequestOptions {
  /**
   * The period's length in milliseconds, a whole number from 1 to 2^48. Periods are aligned on the Unix
   * epoch in UTC (a period of a day starts at 00:00 UTC): period n spans `[n * period, (n + 1) * period)`.
   */
  readonly period: number;
  /**
   * `'retry'` (default): the period is recorded only after the work resolved, so a run that threw, or
   * whose holder died or lost the lock part-way, is run again by the next caller of the same period.
   * `'skip'`: the period is recorded as claimed before the work starts, so nobody runs it again in that
   * period, whatever became of that run (at most one start per period).
   */
  readonly onFailure?: OnceFailurePolicy | undefined;
  /**
   * The instant (ms since the epoch) whose period is run: default `Date.now()` of the caller, read
   * once when `runOnce` is called. Pass it to catch up on a period that has ended.
   */
  readonly at?: number | undefined;
}

/** One period of a job: its start and end (ms since the epoch) and its name, the start in ISO 8601 UTC. */
export interface Period {
  /** The start as ISO 8601 in UTC (`2026-12-02T00:00:00.000Z`): how the record and the CLI name it. */
  readonly name: string;
  /** The first millisecond of the period. */
  readonly start: number;
  /** The first millisecond after it. */
  readonly end: number;
}

/** What the work is given: its period and the held lock (pass `lock.fencingToken` with every write). */
export interface OnceRun {
  /** The period this run is for: the one the caller's clock (or the `at` option) falls in. */
  readonly period: Period;
  /** The job's lock, held while the work runs: its `signal` aborts if the lock is lost. */
  readonly lock: LockHandle;
}

/** How a call of `runOnce` ended: it ran the work, or the period was already done (or claimed). */
export type OnceResult<T> =
  | { readonly outcome: 'ran'; readonly period: Period; readonly value: T; readonly fencingToken: bigint }
  | { readonly outcome: 'skipped'; readonly period: Period; readonly record: OnceRecord };

/** What the job's record says: the last period done, or claimed (with `onFailure: 'skip'`). */
export interface OnceRecord {
  /** The period's start, ISO 8601 UTC. */
  readonly period: string;
  /** `done` once a run resolved; `claimed` when a `'skip'` run started. */
  readonly state: 'done' | 'claimed';
  /** The fencing token of the run that wrote it. */
  readonly fencingToken: string;
}

/**
 * Runs `work` at most once per period of `options.period` ms across every caller of `job` on the same
 * store: the caller queues for the job's lock (`FairMutex(session, job)`), and once granted reads the
 * job's record; if the period is done (or claimed) it releases and resolves `{ outcome: 'skipped' }`,
 * otherwise it runs `work` and records the period with a guarded write, which the store refuses once
 * the lock is lost (`LockLostError`: the period stays open for the next caller). Resolves
 * `{ outcome: 'ran', value }` with what `work` returned; rejects with what it threw (see `onFailure`).
 * The period comes from the caller's clock (`at`, default `Date.now()`): nodes whose clocks differ by
 * `d` disagree on the period for `d` around each boundary. All callers of one job must give the same
 * `period` and `onFailure`. The record stays on the store next to the lock (guarded value `baton-once`).
 */
export async function runOnce<T>(
  session: Session,
  job: string,
  options: OnceOptions,
  work: (run: OnceRun) => Promise<T> | T,
): Promise<OnceResult<T>> {
  const checked = validateOnceOptions(options);
  if (typeof work !== 'function') throw new InvalidArgumentError('work', work, 'a function of { period, lock }');
  const period = periodOf(checked.at ?? Date.now(), checked.period);
  const mutex = new FairMutex(session, job);
  const wait = { timeoutMs: checked.timeoutMs, signal: checked.signal };
  const lock = await mutex.acquire(wait);
  try {
    const record = parseRecord(await lock.guarded.get(ONCE_RECORD));
    if (record !== null && covers(record, period, checked.onFailure)) return { outcome: 'skipped', period, record };
    if (checked.onFailure === 'skip') await writeRecord(lock, period, 'claimed');
    const value = await work({ period, lock });
    await writeRecord(lock, period, 'done');
    return { outcome: 'ran', period, value, fencingToken: lock.fencingToken };
  } finally {
    await lock.release().catch(() => undefined);
  }
}

/** The period of `periodMs` that contains `at`, aligned on the Unix epoch. */
export function periodOf(at: number, periodMs: number): Period {
  const start = Math.floor(at / periodMs) * periodMs;
  return { name: new Date(start).toISOString(), start, end: start + periodMs };
}

/** Whether the record means `period` must not run: a later period recorded, or this one done or claimed. */
function covers(record: OnceRecord, period: Period, policy: OnceFailurePolicy): boolean {
  const recorded = Date.parse(record.period);
  if (recorded > period.start) return true;
  return recorded === period.start && (record.state === 'done' || policy === 'skip');
}

async function writeRecord(lock: LockHandle, period: Period, state: OnceRecord['state']): Promise<void> {
  const record: OnceRecord = { period: period.name, state, fencingToken: lock.fencingToken.toString() };
  await lock.guarded.put(ONCE_RECORD, JSON.stringify(record));
}

/** The stored record, or null if there is none or it is not one (then the period runs). */
function parseRecord(text: string | null): OnceRecord | null {
  if (text === null) return null;
  try {
    const parsed = JSON.parse(text) as Partial<OnceRecord>;
    if (typeof parsed.period !== 'string' || Number.isNaN(Date.parse(parsed.period))) return null;
    if (parsed.state !== 'done' && parsed.state !== 'claimed') return null;
    return { period: parsed.period, state: parsed.state, fencingToken: String(parsed.fencingToken) };
  } catch {
    return null;
  }
}

interface CheckedOnceOptions {
  readonly period: number;
  readonly onFailure: OnceFailurePolicy;
  readonly at: number | undefined;
  readonly timeoutMs: number | undefined;
  readonly signal: AbortSignal | undefined;
}

function validateOnceOptions(options: unknown): CheckedOnceOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options))
    throw new InvalidArgumentError('options', options, 'an object such as { period: 86_400_000 }');
  checkOptionKeys(options, OPTIONS);
  const { period, onFailure, at, timeoutMs, signal } = options as Record<string, unknown>;
  if (typeof period !== 'number' || !Number.isInteger(period) || period < 1 || period > MAX_PERIOD_MS)
    throw new InvalidArgumentError('period', period, `a whole number of milliseconds from 1 to 2^48`);
  if (onFailure !== undefined && onFailure !== 'retry' && onFailure !== 'skip')
    throw new InvalidArgumentError('onFailure', onFailure, '"retry" or "skip"');
  if (at !== undefined && (typeof at !== 'number' || !Number.isInteger(at) || at < 0 || at > MAX_DATE_MS))
    throw new InvalidArgumentError('at', at, 'a whole number of milliseconds since the epoch');
  return {
    period,
    onFailure: onFailure ?? 'retry',
    at,
    timeoutMs: validateTimeout(timeoutMs),
    signal: validateSignal(signal),
  };
}

import { FairMutex } from '../../recipes/mutex.js';
import type { LockHandle } from '../../recipes/handle.js';
import { connect, type ConnectOptions } from '../../src/connect.js';
import type { BatonSession } from '../../src/session.js';
import { writeAsHolder, type HolderWrite } from './fenced-register.js';

/** A belief interval: from the moment a worker's acquire resolved until it exited or was told it lost. */
export interface Interval {
  readonly worker: number;
  readonly token: string;
  readonly from: string;
  readonly to: string;
  readonly lost: boolean;
  /** The write made at the start of the hold; absent if the signal had already aborted. */
  readonly write?: HolderWrite;
  /** Only when lost: the write a process that ignored its signal would still make. */
  readonly late?: HolderWrite;
}

/** What one contender does; the whole object travels to the worker process as JSON. */
export interface ContendPlan {
  readonly url: string;
  readonly options: ConnectOptions;
  readonly worker: number;
  /** The most holds to take; the test usually says stop before. */
  readonly count: number;
  readonly holdMs: number;
  /** The fenced register every hold writes to. */
  readonly registerUrl: string;
  /** Every acquire gives up after this long, and so does the whole run. */
  readonly limitMs: number;
}

const now = (): bigint => process.hrtime.bigint(); // CLOCK_MONOTONIC: comparable across processes

/** Stays inside for `holdMs` unless the signal aborts first. */
function hold(lock: LockHandle, holdMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    if (lock.signal.aborted) return resolve(); // an abort already passed fires no event
    const timer = setTimeout(resolve, holdMs);
    lock.signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    }, { once: true });
  });
}

/**
 * A contender that survives faults: when its session is lost it opens a new one and goes on. Each hold
 * writes its token to the fenced register, stays inside for `holdMs` unless its signal aborts first,
 * and, if it was told it lost the lock, writes once more as a process that missed the news would.
 * Reports one interval per hold; stops after `count` holds, when `stopped()` says so, or at `limitMs`.
 */
export async function contendThroughFaults(plan: ContendPlan, report: (interval: Interval) => void, stopped: () => boolean): Promise<{ sessions: number }> {
  const giveUpAt = Date.now() + plan.limitMs;
  let session: BatonSession | undefined;
  let sessions = 0;
  try {
    for (let done = 0, attempts = 0; done < plan.count && !stopped(); attempts += 1) {
      if (attempts > plan.count * 4 || Date.now() > giveUpAt) throw new Error(`worker ${plan.worker}: ${done} holds in ${attempts} attempts`);
      if (session === undefined || session.state === 'lost') {
        await session?.close();
        session = await connect(plan.url, plan.options);
        sessions += 1;
      }
      let lock;
      try {
        lock = await new FairMutex(session, 'faults').acquire({ timeoutMs: plan.limitMs });
      } catch {
        continue; // the session was lost while waiting: a new one queues again
      }
      const from = now();
      const write = lock.signal.aborted ? undefined : await writeAsHolder(plan.registerUrl, lock.fencingToken, lock.signal);
      await hold(lock, plan.holdMs);
      const lost = lock.signal.aborted;
      const to = now();
      const late = lost ? await writeAsHolder(plan.registerUrl, lock.fencingToken, lock.signal) : undefined;
      report({ worker: plan.worker, token: lock.fencingToken.toString(), from: from.toString(), to: to.toString(), lost, ...(write && { write }), ...(late && { late }) });
      await lock.release().catch(() => undefined);
      done += 1;
    }
  } finally {
    await session?.close();
  }
  return { sessions };
}

/** No two belief intervals overlap, and tokens strictly increase in grant order. */
export function checkIntervals(intervals: readonly Interval[]): string[] {
  const sorted = [...intervals].sort((a, b) => (BigInt(a.from) < BigInt(b.from) ? -1 : 1));
  const violations: string[] = [];
  for (let i = 1; i < sorted.length; i += 1) {
    const before = sorted[i - 1]!;
    const after = sorted[i]!;
    if (BigInt(after.from) < BigInt(before.to)) violations.push(`worker ${after.worker} granted while worker ${before.worker} still believed it held`);
    if (BigInt(after.token) <= BigInt(before.token)) violations.push(`token ${after.token} after ${before.token}`);
  }
  return violations;
}

import { FairMutex } from '../../recipes/mutex.js';
import { connect, type ConnectOptions } from '../../src/connect.js';
import type { BatonSession } from '../../src/session.js';

/** A belief interval: from the moment a worker's acquire resolved until it exited or was told it lost. */
export interface Interval {
  readonly worker: number;
  readonly token: string;
  readonly from: string;
  readonly to: string;
  readonly lost: boolean;
}

const now = (): bigint => process.hrtime.bigint(); // CLOCK_MONOTONIC: comparable across processes

/**
 * A contender that survives faults: when its session is lost it opens a new one and goes on. While it
 * holds, it stays inside for `holdMs` unless its signal aborts first. Reports one interval per hold.
 */
export async function contendThroughFaults(
  url: string,
  options: ConnectOptions,
  worker: number,
  count: number,
  holdMs: number,
  report: (interval: Interval) => void,
): Promise<{ sessions: number }> {
  let session: BatonSession | undefined;
  let sessions = 0;
  try {
    for (let done = 0; done < count; ) {
      if (session === undefined || session.state === 'lost') {
        await session?.close();
        session = await connect(url, options);
        sessions += 1;
      }
      let lock;
      try {
        lock = await new FairMutex(session, 'faults').acquire({ timeoutMs: 60_000 });
      } catch {
        continue; // the session was lost while waiting: a new one queues again
      }
      const from = now();
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, holdMs);
        lock.signal.addEventListener('abort', () => {
          clearTimeout(timer);
          resolve();
        }, { once: true });
      });
      const lost = lock.signal.aborted;
      report({ worker, token: lock.fencingToken.toString(), from: from.toString(), to: now().toString(), lost });
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

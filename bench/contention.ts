import { quantile } from './stats.js';

/** What one contending process reports for a block (times in microseconds on CLOCK_MONOTONIC). */
export interface ContenderReport {
  readonly startedUs: number;
  readonly finishedUs: number;
  /** [granted, releasing, queue order] per acquisition; the order as a decimal string (a bigint). */
  readonly acquisitions: readonly [number, number, string][];
}

export interface Contention {
  readonly acquisitions: number;
  readonly seconds: number;
  readonly perSecond: number;
  /** From one holder starting its release to the next holder's grant, in milliseconds. */
  readonly handoffsMs: number[];
  /** Grants that came before an entry queued ahead of them (grant order against queue order). */
  readonly outOfOrder: number;
  /** Grants that came before the previous holder began its release: two holders at once. */
  readonly overlaps: number;
}

/**
 * Puts every process's acquisitions of one block on one time line. Every acquisition that started was
 * granted (nobody gives up), so grants in queue order are exactly grants whose order only grows.
 */
export function analyse(reports: readonly ContenderReport[]): Contention {
  const all = reports.flatMap((r) => r.acquisitions).sort((a, b) => a[0] - b[0]);
  const handoffsMs: number[] = [];
  let outOfOrder = 0;
  let overlaps = 0;
  for (let i = 1; i < all.length; i += 1) {
    const [granted, , order] = all[i]!;
    const [, releasing, previousOrder] = all[i - 1]!;
    if (granted < releasing) overlaps += 1;
    else handoffsMs.push((granted - releasing) / 1000);
    if (BigInt(order) <= BigInt(previousOrder)) outOfOrder += 1;
  }
  const seconds = (Math.max(...reports.map((r) => r.finishedUs)) - Math.min(...reports.map((r) => r.startedUs))) / 1e6;
  return { acquisitions: all.length, seconds, perSecond: all.length / seconds, handoffsMs, outOfOrder, overlaps };
}

/** Blocks of one contender kind taken together. */
export function combine(blocks: readonly Contention[]): Contention {
  const acquisitions = blocks.reduce((sum, b) => sum + b.acquisitions, 0);
  const seconds = blocks.reduce((sum, b) => sum + b.seconds, 0);
  return {
    acquisitions,
    seconds,
    perSecond: acquisitions / seconds,
    handoffsMs: blocks.flatMap((b) => b.handoffsMs),
    outOfOrder: blocks.reduce((sum, b) => sum + b.outOfOrder, 0),
    overlaps: blocks.reduce((sum, b) => sum + b.overlaps, 0),
  };
}

/** Median of the per-block rates: one slow block (a burst of load elsewhere) does not tip it. */
export function medianRate(blocks: readonly Contention[]): number {
  return quantile(
    blocks.map((b) => b.perSecond),
    0.5,
  );
}

/** One block of one contender kind, with what it cost. */
export interface Contender extends Contention {
  /** Requests the server received for the block's acquisitions (idle traffic taken out). */
  readonly requests: number;
  /** CPU time the contending processes used during the block. */
  readonly clientCpuMs: number;
  /** CPU time the server used during the block (0 for an external server). */
  readonly serverCpuMs: number;
}

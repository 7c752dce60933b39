/** Small statistics helpers for the benchmarks: medians and p99 over samples in milliseconds. */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[index]!;
}

export interface Summary {
  readonly name: string;
  readonly samples: number;
  readonly medianMs: number;
  readonly p99Ms: number;
  readonly opsPerSec: number;
}

export function summarize(name: string, samples: readonly number[]): Summary {
  const medianMs = quantile(samples, 0.5);
  const total = samples.reduce((sum, value) => sum + value, 0);
  return {
    name,
    samples: samples.length,
    medianMs,
    p99Ms: quantile(samples, 0.99),
    opsPerSec: (samples.length / total) * 1000,
  };
}

/** A contender runs `count` cycles and reports each cycle's milliseconds. */
export type Block = (count: number) => Promise<number[]>;

/** Times a one-cycle function as a block. */
export function timed(cycle: () => Promise<void>): Block {
  return async (count) => {
    const samples: number[] = [];
    for (let i = 0; i < count; i += 1) {
      const started = performance.now();
      await cycle();
      samples.push(performance.now() - started);
    }
    return samples;
  };
}

/**
 * The items of round `round` of alternating blocks, in a balanced order (a Williams design): over a
 * full period of rounds (n for an even number of items, 2n for an odd one) each item runs in each place
 * of a round equally often, and right after each other item equally often. On this machine a fixed
 * order favoured whichever kind ran last in a round (measured with the contended case: the same code
 * was 4-10% cheaper per acquisition there); a plain rotation (A B C, B C A, C A B) balanced the places
 * but kept every kind behind the same neighbour, so whatever one kind left behind (a lease to revoke,
 * a server still writing) always fell on the same other kind.
 */
export function balancedRound<T>(items: readonly T[], round: number): T[] {
  const n = items.length;
  if (n < 2) return [...items];
  // Row 0 is 0, 1, n-1, 2, n-2, ...; row r adds r to each; an odd n also runs every row reversed.
  const row = round % balancedPeriod(n);
  const order = Array.from({ length: n }, (_, i) => ((i % 2 === 1 ? (i + 1) / 2 : n - i / 2) + row) % n);
  if (row >= n) order.reverse();
  return order.map((index) => items[index]!);
}

/** How many rounds `balancedRound` takes to balance `n` items: a period of its order. */
export function balancedPeriod(n: number): number {
  return n < 2 ? 1 : n % 2 === 0 ? n : 2 * n;
}

/** `blocks` rounds of `n` kinds made a whole number of periods of the balanced order: the nearest, at least one. */
export function wholePeriods(blocks: number, n: number): number {
  const period = balancedPeriod(n);
  return Math.max(1, Math.round(blocks / period)) * period;
}

/**
 * Runs the contenders in alternating blocks, each round in a balanced order (see `balancedRound`), so
 * that the machine's drift and noise fall on all of them alike. The rounds are whole periods of that
 * order (`wholePeriods`), with about as many cycles in all as asked for (more or fewer per block).
 */
export async function alternate(
  contenders: Record<string, Block>,
  options: { blocks: number; perBlock: number; warmup: number },
): Promise<Record<string, number[]>> {
  return flatBlocks(await alternateBlocks(contenders, options));
}

/** Each contender's samples of every block in one list, as `alternate` gives them. */
export function flatBlocks(blocks: Record<string, number[][]>): Record<string, number[]> {
  return Object.fromEntries(Object.entries(blocks).map(([name, runs]) => [name, runs.flat()]));
}

/** `alternate`, keeping each block's samples apart: block i of every contender ran in round i. */
export async function alternateBlocks(
  contenders: Record<string, Block>,
  options: { blocks: number; perBlock: number; warmup: number },
): Promise<Record<string, number[][]>> {
  const samples: Record<string, number[][]> = {};
  for (const [name, run] of Object.entries(contenders)) {
    samples[name] = [];
    await run(options.warmup);
  }
  const blocks = wholePeriods(options.blocks, Object.keys(contenders).length);
  const perBlock = Math.max(1, Math.round((options.blocks * options.perBlock) / blocks));
  for (let block = 0; block < blocks; block += 1) {
    for (const [name, run] of balancedRound(Object.entries(contenders), block))
      samples[name]!.push(await run(perBlock));
  }
  return samples;
}

/**
 * How far the ratio of medians `a / b` would move if the run were repeated: a 95% interval from a
 * bootstrap over rounds (rounds drawn again with replacement, the two contenders' blocks of a round
 * kept together, since they shared its conditions). Seeded, so that the same samples give the same
 * interval. On a noisy machine most of the spread is between rounds, which this captures.
 */
export function ratioInterval(
  a: readonly (readonly number[])[],
  b: readonly (readonly number[])[],
  resamples = 1_000,
  seed = 1,
): [number, number] {
  if (a.length !== b.length || a.length === 0)
    throw new Error(`ratioInterval needs the same rounds on both sides, got ${a.length} and ${b.length}`);
  let state = seed >>> 0;
  const next = (): number => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
  const ratios: number[] = [];
  for (let r = 0; r < resamples; r += 1) {
    const pickA: number[] = [];
    const pickB: number[] = [];
    for (let i = 0; i < a.length; i += 1) {
      const round = Math.floor(next() * a.length);
      pickA.push(...a[round]!);
      pickB.push(...b[round]!);
    }
    ratios.push(quantile(pickA, 0.5) / quantile(pickB, 0.5));
  }
  return [quantile(ratios, 0.025), quantile(ratios, 0.975)];
}

/**
 * The lowest and highest ratio `a[i] / b[i]` over blocks run side by side (block i of each in round i):
 * how far a single block's figure strayed in this run.
 */
export function pairedRange(a: readonly number[], b: readonly number[]): [number, number] {
  if (a.length !== b.length || a.length === 0)
    throw new Error(`pairedRange needs the same blocks on both sides, got ${a.length} and ${b.length}`);
  const ratios = a.map((value, i) => value / b[i]!);
  return [Math.min(...ratios), Math.max(...ratios)];
}

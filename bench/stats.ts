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
  return { name, samples: samples.length, medianMs, p99Ms: quantile(samples, 0.99), opsPerSec: (samples.length / total) * 1000 };
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
 * The items of round `round` of alternating blocks: A, B, C, then B, C, A, then C, A, B. Each kind takes
 * each place in a round equally often: on this machine a fixed order favoured whichever kind ran last in
 * a round (measured with the contended case: the same code was 4-10% cheaper per acquisition there).
 */
export function rotated<T>(items: readonly T[], round: number): T[] {
  const from = round % Math.max(items.length, 1);
  return [...items.slice(from), ...items.slice(0, from)];
}

/**
 * Runs the contenders in alternating blocks (A, B, C, B, C, A, ...: see `rotated`) so that the machine's
 * drift and noise fall on all of them alike.
 */
export async function alternate(
  contenders: Record<string, Block>,
  options: { blocks: number; perBlock: number; warmup: number },
): Promise<Record<string, number[]>> {
  const samples: Record<string, number[]> = {};
  for (const [name, run] of Object.entries(contenders)) {
    samples[name] = [];
    await run(options.warmup);
  }
  for (let block = 0; block < options.blocks; block += 1) {
    for (const [name, run] of rotated(Object.entries(contenders), block)) samples[name]!.push(...(await run(options.perBlock)));
  }
  return samples;
}

import { describe, expect, it } from 'vitest';

import {
  alternate,
  alternateBlocks,
  balancedPeriod,
  balancedRound,
  pairedRange,
  quantile,
  ratioInterval,
  wholePeriods,
} from '../../bench/stats.js';

// The benchmark's ratios are only fair if every kind meets the same neighbours and places over a run:
// a kind always run last in a round, or always right after the same other kind, measured differently.
describe('balancedRound (the order of alternating benchmark blocks)', () => {
  it('over one period, puts every kind in every place, and right after every other kind, equally often', () => {
    for (let n = 2; n <= 9; n += 1) {
      const kinds = Array.from({ length: n }, (_, i) => String.fromCharCode(65 + i));
      const period = balancedPeriod(n);
      const places = new Map<string, number>();
      const follows = new Map<string, number>();
      for (let round = 0; round < period; round += 1) {
        const order = balancedRound(kinds, round);
        expect([...order].sort()).toEqual(kinds);
        order.forEach((kind, place) => places.set(`${kind}@${place}`, (places.get(`${kind}@${place}`) ?? 0) + 1));
        for (let i = 1; i < n; i += 1)
          follows.set(`${order[i - 1]}>${order[i]}`, (follows.get(`${order[i - 1]}>${order[i]}`) ?? 0) + 1);
      }
      const perPlace = period / n;
      expect(places.size).toBe(n * n);
      expect(new Set(places.values())).toEqual(new Set([perPlace]));
      // Every ordered pair of different kinds is adjacent, each as often: once per period for an even
      // number of kinds, twice for an odd one (whose period is twice as long).
      expect(follows.size).toBe(n * (n - 1));
      expect(new Set(follows.values())).toEqual(new Set([period / n]));
      // A plain rotation would have kept one neighbour per kind: n ordered pairs of the n(n-1).
    }
  });

  it('leaves one kind alone; a run is made whole periods, the nearest number of them, at least one', () => {
    expect(balancedRound(['A'], 3)).toEqual(['A']);
    expect(wholePeriods(10, 4)).toBe(12); // 2.5 periods of 4 rounds
    expect(wholePeriods(7, 4)).toBe(8);
    expect(wholePeriods(7, 3)).toBe(6); // three kinds balance over six rounds
    expect(wholePeriods(10, 9)).toBe(18);
    expect(wholePeriods(10, 2)).toBe(10);
    expect(wholePeriods(3, 1)).toBe(3);
  });

  it('runs whole periods, with about as many cycles in all as asked for', async () => {
    const ran: string[] = [];
    const cycles: Record<string, number> = {};
    const block =
      (name: string) =>
      async (count: number): Promise<number[]> => {
        ran.push(name);
        cycles[name] = (cycles[name] ?? 0) + count;
        return Array.from({ length: count }, () => 1);
      };
    const samples = await alternate(
      { A: block('A'), B: block('B'), C: block('C') },
      { blocks: 4, perBlock: 30, warmup: 0 },
    );
    // Four asked-for blocks of 30 of three kinds become one period, six blocks of 20.
    expect(ran.length).toBe(3 + 6 * 3); // the warm-up block of each, then the rounds
    expect(cycles).toEqual({ A: 120, B: 120, C: 120 });
    expect(samples.A).toHaveLength(120);
  });

  it("keeps each round's block apart when asked (alternateBlocks): block i of every kind ran in round i", async () => {
    let calls = 0;
    // Calls 0 and 1 are the warm-ups; from then on every two calls make a round. Each block answers
    // with the round it ran in.
    const block = async (count: number): Promise<number[]> => {
      const round = calls < 2 ? -1 : Math.floor((calls - 2) / 2);
      calls += 1;
      return Array.from({ length: count }, () => round);
    };
    const blocks = await alternateBlocks({ A: block, B: block }, { blocks: 4, perBlock: 5, warmup: 1 });
    expect(blocks.A!.map((b) => b.length)).toEqual([5, 5, 5, 5]);
    expect(blocks.A!.map((b) => b[0])).toEqual([0, 1, 2, 3]);
    expect(blocks.B!.map((b) => b[0])).toEqual([0, 1, 2, 3]);
  });
});

describe('ratioInterval (how far a ratio of medians would move in another run)', () => {
  const rounds = (values: number[][]): number[][] => values;

  it('is a single point when every round gives the same ratio', () => {
    const a = rounds([
      [1, 2, 3],
      [10, 20, 30],
      [4, 5, 6],
    ]);
    const b = a.map((block) => block.map((x) => x * 2));
    expect(ratioInterval(a, b)).toEqual([0.5, 0.5]);
  });

  it('spans the ratios of rounds that differ, around the ratio of the whole run, and is the same for the same samples', () => {
    const a = rounds([
      [1.0, 1.0, 1.0],
      [1.2, 1.2, 1.2],
      [1.0, 1.0, 1.0],
      [1.1, 1.1, 1.1],
      [0.9, 0.9, 0.9],
      [1.05, 1.05, 1.05],
    ]);
    const b = rounds([
      [1.0, 1.0, 1.0],
      [1.0, 1.0, 1.0],
      [1.0, 1.0, 1.0],
      [1.0, 1.0, 1.0],
      [1.0, 1.0, 1.0],
      [1.0, 1.0, 1.0],
    ]);
    const [low, high] = ratioInterval(a, b);
    const whole = quantile(a.flat(), 0.5) / quantile(b.flat(), 0.5);
    expect(low).toBeLessThan(high);
    expect(low).toBeLessThanOrEqual(whole);
    expect(high).toBeGreaterThanOrEqual(whole);
    expect(low).toBeGreaterThanOrEqual(0.9);
    expect(high).toBeLessThanOrEqual(1.2);
    expect(ratioInterval(a, b)).toEqual([low, high]);
  });

  it('refuses sides with different rounds', () => {
    expect(() => ratioInterval([[1]], [[1], [2]])).toThrow(/same rounds/);
    expect(() => ratioInterval([], [])).toThrow(/same rounds/);
  });
});

describe('pairedRange (the spread of per-block ratios)', () => {
  it('gives the lowest and highest ratio of blocks run side by side, and refuses unpaired blocks', () => {
    expect(pairedRange([2, 3, 4], [2, 2, 2])).toEqual([1, 2]);
    expect(pairedRange([5], [4])).toEqual([1.25, 1.25]);
    expect(() => pairedRange([1, 2], [1])).toThrow(/same blocks/);
    expect(() => pairedRange([], [])).toThrow(/same blocks/);
  });
});

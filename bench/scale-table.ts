import type { QueueOutcome } from './scale-queue.js';
import { ms } from './table.js';

/** One N: baton's run and the floor's. */
export interface ScaleRow {
  readonly n: number;
  readonly baton: QueueOutcome;
  readonly floor: QueueOutcome;
}

interface Figure {
  readonly name: string;
  readonly value: (outcome: QueueOutcome) => number | undefined;
  readonly format: (value: number) => string;
}

const per = (total: number | undefined, n: number): number | undefined => (total === undefined ? undefined : total / n);

const FIGURES: readonly Figure[] = [
  { name: 'time to queue per waiter', value: (o) => per(o.queueMs, o.n), format: ms },
  { name: 'drain time', value: (o) => o.drainMs, format: (v) => `${(v / 1000).toFixed(2)}s` },
  { name: 'time per handoff', value: (o) => per(o.drainMs, o.n), format: ms },
  { name: 'requests per enqueue', value: (o) => per(o.requestsQueueing, o.n), format: (v) => v.toFixed(2) },
  { name: 'requests per handoff', value: (o) => per(o.requestsDraining, o.n), format: (v) => v.toFixed(2) },
  { name: 'heap per queued waiter', value: (o) => o.heapBytesPerWaiter, format: (v) => `${(v / 1024).toFixed(2)}KiB` },
  { name: 'sessions lost', value: (o) => o.sessionsLost, format: (v) => v.toFixed(0) },
];

const cell = (value: number | undefined, format: (v: number) => string): string =>
  value === undefined || !Number.isFinite(value) ? '-' : format(value);

/**
 * Per N and figure: baton, the floor, baton / floor; then each figure's slope (largest N / smallest),
 * baton's and the floor's.
 */
export function printScaleTable(label: string, rows: readonly ScaleRow[]): void {
  const line = (cells: readonly string[]): void => {
    const [first, second, ...rest] = cells;
    process.stdout.write(`${first!.padStart(7)}  ${second!.padEnd(26)}${rest.map((c) => c.padStart(12)).join('')}\n`);
  };
  line(['N', `${label} figure`, 'baton', 'floor', '/floor']);
  for (const row of rows) {
    for (const outcome of [row.baton, row.floor])
      if (outcome.didNotFinish !== undefined)
        process.stdout.write(
          `${String(row.n).padStart(7)}  ${outcome === row.baton ? 'baton' : 'floor'} did not finish: ${outcome.didNotFinish}\n`,
        );
    for (const figure of FIGURES) {
      const [ours, floor] = [figure.value(row.baton), figure.value(row.floor)];
      const ratio = ours === undefined || floor === undefined || floor === 0 ? undefined : ours / floor;
      line([
        String(row.n),
        figure.name,
        cell(ours, figure.format),
        cell(floor, figure.format),
        cell(ratio, (v) => `${v.toFixed(2)}x`),
      ]);
    }
  }
  const [first, last] = [rows[0], rows.at(-1)];
  if (first === undefined || last === undefined || first === last) return;
  for (const figure of FIGURES.slice(0, -1)) {
    const slope = (a: QueueOutcome, b: QueueOutcome): number | undefined => {
      const [low, high] = [figure.value(a), figure.value(b)];
      return low === undefined || high === undefined ? undefined : high / low;
    };
    line([
      `slope`,
      `${figure.name} ${last.n}/${first.n}`,
      cell(slope(first.baton, last.baton), (v) => `${v.toFixed(2)}x`),
      cell(slope(first.floor, last.floor), (v) => `${v.toFixed(2)}x`),
      '',
    ]);
  }
}

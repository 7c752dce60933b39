import type { ConfigStore, Ledger } from './ledger.js';
import type { WorkerEvent } from './protocol.js';

interface Stats {
  grants: number;
  settled: number[];
  skipped: number;
  waits: number[];
  refused: number;
  lost: number;
}

/** A hold as the timeline saw it: from the grant to the moment its holder began to let go. */
interface Interval {
  readonly worker: string;
  readonly what: string;
  readonly from: number;
  to: number;
  version?: number;
}

/** Prints the demo as it happens, one line per event, and keeps what the summary needs. */
export class Timeline {
  readonly #started = performance.now();
  readonly #stats = new Map<string, Stats>();
  readonly #intervals: Interval[] = [];
  readonly #failures: string[] = [];

  constructor(private readonly write: (line: string) => void) {}

  note(text: string): void {
    this.write(`${this.#stamp()}  ${'--'.padEnd(9)} ${text}\n`);
  }

  record(event: WorkerEvent): void {
    const stats = this.#of(event.worker);
    // Holds are timed where they happen, in wall-clock time shared by the processes of one machine.
    const now = event.at ?? Date.now();
    if (event.type === 'granted') {
      stats.grants += 1;
      stats.waits.push(event.waitedMs ?? 0);
      this.#intervals.push({ worker: event.worker, what: event.what ?? '', from: now, to: Number.POSITIVE_INFINITY });
    } else if (event.type === 'releasing') {
      const open = this.#intervals.findLast(
        (i) => i.worker === event.worker && i.what === event.what && i.to === Number.POSITIVE_INFINITY,
      );
      if (open !== undefined) open.to = now;
    } else if (event.type === 'read') {
      const open = this.#intervals.findLast((i) => i.worker === event.worker && i.what === 'read lock');
      if (open !== undefined) open.version = event.version ?? 0;
    }
    if (event.type === 'settled') stats.settled.push(event.period ?? 0);
    if (event.type === 'skipped') stats.skipped += 1;
    if (event.type === 'refused') stats.refused += 1;
    if (event.type === 'lost') stats.lost += 1;
    if (event.type === 'failed') this.#failures.push(`${event.worker} failed: ${event.detail ?? 'unknown'}`);
    if (event.type !== 'releasing') this.write(`${this.#stamp()}  ${event.worker.padEnd(9)} ${describe(event)}\n`);
  }

  /** Workers whose command failed (an error, a crashed process): the demo did not do what it shows. */
  failures(): string[] {
    return [...this.#failures];
  }

  /** Readers shared, no reader overlapped the writer, late readers saw the writer's version. */
  configReport(
    writer: string,
    early: string[],
    late: string[],
  ): { readersOverlapped: boolean; lateReadersSaw: number[]; written: number; violations: string[] } {
    const holds = this.#intervals.filter((i) => i.what === 'read lock' || i.what === 'write lock');
    const write = holds.find((i) => i.worker === writer && i.what === 'write lock');
    const reads = holds.filter((i) => i.what === 'read lock');
    const overlap = (a: Interval, b: Interval): boolean => a.from < b.to && b.from < a.to;
    const violations = reads
      .filter((read) => write !== undefined && overlap(read, write))
      .map((read) => `${read.worker} read while ${writer} wrote`);
    const earlyReads = reads.filter((read) => early.includes(read.worker));
    const lateReads = reads.filter((read) => late.includes(read.worker));
    const readersOverlapped = earlyReads.length === 2 && overlap(earlyReads[0]!, earlyReads[1]!);
    const written = this.#intervals.length === 0 ? 0 : Math.max(0, ...lateReads.map((read) => read.version ?? 0));
    return { readersOverlapped, lateReadersSaw: lateReads.map((read) => read.version ?? 0), written, violations };
  }

  summary(
    ledger: Ledger,
    config: ConfigStore,
    shared: { readersOverlapped: boolean; lateReadersSaw: readonly number[] },
    violations: readonly string[],
  ): void {
    this.write('\nworker     grants  settled         skipped  mean wait   max wait  refused  lost\n');
    for (const [worker, stats] of [...this.#stats].sort(([a], [b]) =>
      a.localeCompare(b, undefined, { numeric: true }),
    )) {
      const mean = stats.waits.reduce((sum, wait) => sum + wait, 0) / Math.max(stats.waits.length, 1);
      this.write(
        `${worker.padEnd(9)}  ${String(stats.grants).padStart(6)}  ${(stats.settled.join(',') || '-').padEnd(14)}  ${String(stats.skipped).padStart(7)}  ${ms(mean).padStart(9)}  ${ms(Math.max(0, ...stats.waits)).padStart(9)}  ${String(stats.refused).padStart(7)}  ${String(stats.lost).padStart(4)}\n`,
      );
    }
    const tokens = [...ledger.settledBy.entries()]
      .sort(([a], [b]) => a - b)
      .map(([period, { worker, token }]) => `${period}:${worker}@${token}`);
    this.write(
      `\nledger: ${ledger.settledBy.size} periods settled once each (${tokens.join(' ')}), ${ledger.refused.length} stale write${ledger.refused.length === 1 ? '' : 's'} refused\n`,
    );
    for (const refused of ledger.refused)
      this.write(
        `        refused: ${refused.worker} for period ${refused.period} with token ${refused.token} (the ledger had seen ${refused.newest})\n`,
      );
    this.write(
      `configuration: now v${config.version}; the first readers ${shared.readersOverlapped ? 'held the read lock together' : 'did NOT overlap'}, the readers queued behind the writer read ${shared.lateReadersSaw.map((v) => `v${v}`).join(' and ')}\n`,
    );
    this.write(
      violations.length === 0
        ? 'no violation: one settler per period, stale writes refused, no reader overlapped the writer\n'
        : `VIOLATIONS:\n${violations.map((v) => `  ${v}\n`).join('')}`,
    );
  }

  #of(worker: string): Stats {
    let stats = this.#stats.get(worker);
    if (stats === undefined)
      this.#stats.set(worker, (stats = { grants: 0, settled: [], skipped: 0, waits: [], refused: 0, lost: 0 }));
    return stats;
  }

  #stamp(): string {
    return `+${(performance.now() - this.#started).toFixed(0).padStart(6)} ms`;
  }
}

function describe(event: WorkerEvent): string {
  const token = event.token === undefined ? '' : `token ${event.token}`;
  switch (event.type) {
    case 'granted':
      return `granted ${event.what}${event.period === undefined ? '' : ` (period ${event.period})`}  ${token}  waited ${ms(event.waitedMs ?? 0)}`;
    case 'computing':
      return `period ${event.period} not settled yet: computing the batch`;
    case 'skipped':
      return `period ${event.period} already settled: nothing to do`;
    case 'settled':
      return `settled period ${event.period}  ${token}`;
    case 'refused':
      return `late write for period ${event.period} REFUSED by the ledger  ${token} (stale): ${event.detail ?? 'refused'}`;
    case 'lost':
      return `signal aborted on ${event.what}  ${token}: ${event.detail}`;
    case 'read':
      return `read configuration v${event.version}`;
    case 'wrote':
      return `wrote configuration v${event.version}  ${token}`;
    default:
      return `${event.type}${event.detail === undefined ? '' : `: ${event.detail}`}`;
  }
}

function ms(value: number): string {
  return `${value.toFixed(1)} ms`;
}

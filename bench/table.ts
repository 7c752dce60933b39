import os from 'node:os';

import type { Report } from './report.js';
import type { Summary } from './stats.js';

function out(line = ''): void {
  process.stdout.write(`${line}\n`);
}

export function machine(): string {
  return `${os.cpus().length} cpu ${os.cpus()[0]?.model ?? ''}, node ${process.version}`.replace(/\s+/g, ' ');
}

export function heading(title: string): void {
  out();
  out(`${title}  [${machine()}]`);
}

/** Medians side by side, with each case's ratio to every reference measured in the same run. */
export function printCases(results: readonly Summary[], references: Record<string, Summary | undefined> = {}): void {
  const refs = Object.entries(references).filter((entry): entry is [string, Summary] => entry[1] !== undefined);
  out(
    `${'case'.padEnd(56)} ${'median'.padStart(9)} ${'p99'.padStart(9)} ${'ops/s'.padStart(8)}${refs.map(([n]) => ` ${`/${n}`.padStart(12)}`).join('')}`,
  );
  for (const result of results) {
    const ratios = refs.map(([, ref]) => ` ${`${(result.medianMs / ref.medianMs).toFixed(3)}x`.padStart(12)}`);
    out(
      `${result.name.padEnd(56)} ${ms(result.medianMs).padStart(9)} ${ms(result.p99Ms).padStart(9)} ${result.opsPerSec.toFixed(0).padStart(8)}${ratios.join('')}`,
    );
  }
}

/** A figure per case, as `name .... value`. */
export function printFigures(title: string, figures: Record<string, string>): void {
  if (title !== '') out(title);
  for (const [name, value] of Object.entries(figures)) out(`  ${name.padEnd(54)} ${value}`);
}

/** Milliseconds with three decimals, or microseconds below a tenth of a millisecond. */
export function ms(value: number): string {
  return value < 0.1 ? `${(value * 1000).toFixed(2)}us` : `${value.toFixed(3)}ms`;
}

/** The one table a reader looks at: every figure with its target and whether it was met. */
export function printSummary(report: Report): void {
  heading('Summary');
  const rows = report.checks.map((c) => [
    String(c.item),
    c.name,
    c.measured,
    c.target,
    c.verdict === 'info' ? '' : c.verdict,
  ]);
  const widths = [1, 2, 3].map((column) => Math.max(...rows.map((row) => row[column]!.length), 6));
  out(`${'#'} ${'case'.padEnd(widths[0]!)}  ${'measured'.padEnd(widths[1]!)}  ${'target'.padEnd(widths[2]!)}  verdict`);
  for (const row of rows)
    out(
      `${row[0]} ${row[1]!.padEnd(widths[0]!)}  ${row[2]!.padEnd(widths[1]!)}  ${row[3]!.padEnd(widths[2]!)}  ${row[4]}`,
    );
  const missed = report.checks.filter((c) => c.verdict === 'MISSED').length;
  const met = report.checks.filter((c) => c.verdict === 'met').length;
  out(`${met} targets met, ${missed} missed`);
}

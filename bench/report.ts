/** One line of the summary: a figure, the target it is held to (if any), and whether it was met. */
export interface Check {
  /** The issue's item number (1: uncontended ZooKeeper, 2: contended, ... 7: memory). */
  readonly item: number;
  readonly name: string;
  readonly measured: string;
  readonly target: string;
  readonly verdict: 'met' | 'MISSED' | 'info';
  /** The figure as a number, for the JSON file. */
  readonly value: number;
}

export type Format = (value: number) => string;
/** Three decimals: a ratio of 0.796 against a target of 0.8 must not read as 0.80. */
export const times: Format = (value) => `${value.toFixed(3)}x`;
/** A range of ratios, `low-high`, each as `times` writes it. */
export const timesRange = ([low, high]: readonly [number, number]): string => `${times(low)}-${times(high)}`;
export const fixed =
  (digits: number, unit = ''): Format =>
  (value) =>
    `${value.toFixed(digits)}${unit}`;

/** The checks of a run, in the order they were made. */
export class Report {
  readonly checks: Check[] = [];

  atMost(item: number, name: string, value: number, limit: number, format: Format, detail = ''): void {
    this.#add(item, name, value, format, detail, `<= ${format(limit)}`, value <= limit);
  }

  atLeast(item: number, name: string, value: number, limit: number, format: Format, detail = ''): void {
    this.#add(item, name, value, format, detail, `>= ${format(limit)}`, value >= limit);
  }

  exactly(item: number, name: string, value: number, expected: number, format: Format, detail = ''): void {
    this.#add(item, name, value, format, detail, `= ${format(expected)}`, value === expected);
  }

  /** A yes/no property (strict FIFO, listeners back to the baseline). */
  holds(item: number, name: string, ok: boolean, measured: string, target: string): void {
    this.checks.push({ item, name, measured, target, verdict: ok ? 'met' : 'MISSED', value: ok ? 1 : 0 });
  }

  /** A figure with no target, shown for context. */
  info(item: number, name: string, value: number, measured: string): void {
    this.checks.push({ item, name, measured, target: '', verdict: 'info', value });
  }

  #add(item: number, name: string, value: number, format: Format, detail: string, target: string, met: boolean): void {
    const measured = `${format(value)}${detail === '' ? '' : ` ${detail}`}`;
    this.checks.push({ item, name, measured, target, verdict: met ? 'met' : 'MISSED', value });
  }
}

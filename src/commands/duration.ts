import { InvalidArgumentError as CommanderArgumentError } from 'commander';

import { MAX_PERIOD_MS } from '../../recipes/once.js';

/** ISO 8601 durations of fixed length: weeks, or days and a time part (no years or months, which vary). */
const ISO_DURATION =
  /^P(?:(?<weeks>\d+)W|(?:(?<days>\d+)D)?(?:T(?:(?<hours>\d+)H)?(?:(?<minutes>\d+)M)?(?:(?<seconds>\d+(?:\.\d{1,3})?)S)?)?)$/;

const UNIT_MS = { weeks: 604_800_000, days: 86_400_000, hours: 3_600_000, minutes: 60_000, seconds: 1_000 } as const;

/**
 * `--period`: a whole number of milliseconds (`3600000`) or an ISO 8601 duration of fixed length
 * (`P1D`, `PT1H`, `PT1.5S`, `P1W`; years and months are refused, as their length varies).
 */
export function periodMs(value: string): number {
  const ms = /^\d+$/.test(value) ? Number(value) : isoDurationMs(value.toUpperCase());
  if (ms === undefined || !Number.isInteger(ms) || ms < 1 || ms > MAX_PERIOD_MS)
    throw new CommanderArgumentError(
      'milliseconds (1 to 2^48) or an ISO 8601 duration of days, hours, minutes and seconds (P1D, PT1H, PT1.5S) or weeks (P1W)',
    );
  return ms;
}

function isoDurationMs(value: string): number | undefined {
  const match = ISO_DURATION.exec(value);
  if (match?.groups === undefined || value === 'P' || value.endsWith('T')) return undefined;
  let total = 0;
  for (const [unit, ms] of Object.entries(UNIT_MS)) {
    const amount = match.groups[unit];
    if (amount !== undefined) total += Math.round(Number(amount) * ms);
  }
  return total;
}

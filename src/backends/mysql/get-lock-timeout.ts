import type { ServerFlavour } from './server-checks.js';

/**
 * The timeout to give `GET_LOCK` for a wait of `seconds`. MySQL 8 reads it as a whole number of seconds
 * (a fraction is truncated: 0.5 becomes 0, an answer at once, no wait at all), so it gets the seconds
 * rounded up, at least 1; MariaDB keeps fractions, so it gets them as they are (to the millisecond).
 */
export function getLockTimeout(flavour: ServerFlavour, seconds: number): number {
  if (flavour === 'mariadb') return Math.max(0.001, Math.round(seconds * 1_000) / 1_000);
  // Ten microseconds of float error (2.000000001) are not a second more.
  return Math.max(1, Math.ceil(seconds - 1e-5));
}

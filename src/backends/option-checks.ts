/** Checks of `connect()` option values that several backends share; each throws `InvalidArgumentError`. */
import { InvalidArgumentError } from '../../recipes/errors.js';
import { MAX_TIMEOUT_MS } from '../../recipes/validate.js';

/** true or false; false when not given. */
export function flag(value: unknown, what: string): boolean {
  if (value === undefined) return false;
  if (typeof value !== 'boolean') throw new InvalidArgumentError(what, value, 'true or false');
  return value;
}

/** One of the allowed words; the first is the default. */
export function oneOf<T extends string>(value: unknown, what: string, allowed: readonly [T, ...T[]]): T {
  if (value === undefined) return allowed[0];
  if (!allowed.includes(value as T))
    throw new InvalidArgumentError(what, value, allowed.map((word) => `"${word}"`).join(' or '));
  return value as T;
}

/** A whole number of milliseconds from 1 to `MAX_TIMEOUT_MS`; `fallback` when not given. */
export function positiveMs(value: unknown, what: string, fallback: number): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > MAX_TIMEOUT_MS) {
    throw new InvalidArgumentError(what, value, `a whole number of milliseconds from 1 to ${MAX_TIMEOUT_MS}`);
  }
  return value;
}

/** A plain object (not null, not an array). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

import { InvalidArgumentError } from './errors.js';

/** What a grant gives back when its holder is done: a lock, permits, a multi-lock. */
export interface Releasable {
  release(): Promise<void>;
}

/**
 * Acquires with `acquire`, runs `fn` with the grant and releases it afterwards, also when `fn` throws:
 * the one body of every recipe's `withLock` and `withPermit`. A bad `fn` is refused before anything
 * is queued.
 */
export async function runHolding<H extends Releasable, T>(
  fn: (held: H) => Promise<T> | T,
  acquire: () => Promise<H>,
): Promise<T> {
  if (typeof fn !== 'function') throw new InvalidArgumentError('fn', fn, 'a function');
  const held = await acquire();
  try {
    return await fn(held);
  } finally {
    await held.release();
  }
}

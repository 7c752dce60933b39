import type { Entry } from './contract.js';

/**
 * Who must go before `self`, given a queue sorted by order: the entry to watch, several entries (the
 * wait ends when any one of them goes), or null when `self` may proceed. Pure functions, one per
 * recipe; the waiting loop is shared. A decision reads only the entries ordered before `self`: the
 * waiting loop lists with `through` (see `Backend.list`), and a backend may leave out of such a listing
 * what is behind `self`. A decision may throw (a typed error: entries `self` cannot queue with); the
 * waiting loop then withdraws `self` and rejects with it.
 */
export type Decide = (queue: readonly Entry[], self: Entry) => Entry | readonly Entry[] | null;

/** Mutex, write lock, election: blocked by the entry immediately before mine, of any kind. */
export const exclusive: Decide = (queue, self) => {
  let before: Entry | null = null;
  for (const entry of queue) {
    if (entry.order >= self.order) break;
    before = entry;
  }
  return before;
};

/**
 * Read lock: blocked by the nearest entry before mine that is not a read (a writer, or a mutex or any
 * other recipe's entry on the same name); readers share only with readers.
 */
export const shared: Decide = (queue, self) => {
  let exclusive: Entry | null = null;
  for (const entry of queue) {
    if (entry.order >= self.order) break;
    if (entry.kind !== 'read') exclusive = entry;
  }
  return exclusive;
};

/**
 * How a decision reads only the entries nearest ahead of `self` (`Backend.listBefore`) instead of the
 * whole queue: `page` entries first, then, if those did not decide, every entry ahead.
 *
 * A backend may leave out an entry placed `at` another after `self` was enqueued (see `listBefore`).
 * Only two things place one so: a downgrade (a read at its write entry's place) and a semaphore's
 * announced grant (its entry again at its own place), each at an entry that is already ahead. So the
 * short read is used only when the queue ahead of `self`, as its enqueue read it, holds no entry of a
 * mover whose move this decision must see (`mustSee`); entries enqueued later sit behind `self` and
 * cannot move ahead of it. Otherwise the waiter lists the queue as before.
 */
export interface Lookahead {
  /** How many entries ahead the first read asks for. */
  readonly page: number;
  /** The movers (see `moverOf`) whose entries ahead could put one at their place that this decision must see. */
  readonly mustSee: readonly Mover[];
}

/**
 * The kinds of entry that may later put another entry at their own place: a write entry (its
 * downgrade's read) and a semaphore's (its announced grant). A backend that answers an enqueue with a
 * window of the queue (`Backend.enqueueAhead`) tells which of them the queue holds.
 */
export type Mover = 'write' | 'semaphore';

/** A semaphore entry's kind (`semaphore_<count>_<permits>`): its grant is announced by moving it. */
const SEMAPHORE_KIND = /^semaphore_\d+_\d+$/;

/** Which mover an entry of `kind` is, if any. */
export function moverOf(kind: string): Mover | undefined {
  if (kind === 'write') return 'write';
  return SEMAPHORE_KIND.test(kind) ? 'semaphore' : undefined;
}

/** The movers with an entry ordered before `self` in `queue` (sorted by order). */
export function moversAhead(queue: readonly Entry[], self: Entry): Mover[] {
  const movers = new Set<Mover>();
  for (const entry of queue) {
    if (entry.order >= self.order) break;
    const mover = moverOf(entry.kind);
    if (mover !== undefined) movers.add(mover);
  }
  return [...movers];
}

/** Whether any of `movers` is one whose moves the decision of `lookahead` must see (no short reads then). */
export function mustSeeAny(lookahead: Lookahead, movers: readonly Mover[]): boolean {
  return movers.some((mover) => lookahead.mustSee.includes(mover));
}

/**
 * Exclusive: any entry ahead blocks, so one is enough; a downgrade's read and a semaphore's moved
 * entry both block, so a write or semaphore entry ahead means the whole queue is read.
 */
export const exclusiveLookahead: Lookahead = { page: 1, mustSee: ['write', 'semaphore'] };

/**
 * Shared: the nearest entry ahead that is not a read. A downgrade puts a read there, which blocks no
 * reader; only a semaphore's moved entry (another recipe on the same name) must be seen.
 */
export const sharedLookahead: Lookahead = { page: 16, mustSee: ['semaphore'] };

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

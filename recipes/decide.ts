import type { Entry } from './contract.js';

/**
 * Who must go before `self`, given a queue sorted by order: the entry to watch, or null when `self`
 * may proceed. Pure functions, one per recipe; the waiting loop is shared.
 */
export type Decide = (queue: readonly Entry[], self: Entry) => Entry | null;

/** Mutex, write lock, election: blocked by the entry immediately before mine, of any kind. */
export const exclusive: Decide = (queue, self) => {
  let before: Entry | null = null;
  for (const entry of queue) {
    if (entry.order >= self.order) break;
    before = entry;
  }
  return before;
};

/** Read lock: blocked by the nearest write entry before mine; readers share with readers. */
export const shared: Decide = (queue, self) => {
  let writer: Entry | null = null;
  for (const entry of queue) {
    if (entry.order >= self.order) break;
    if (entry.kind === 'write') writer = entry;
  }
  return writer;
};

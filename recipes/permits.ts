import { BoundedMap } from './bounded-map.js';
import type { Entry } from './contract.js';
import type { Decide } from './decide.js';
import { PermitsMismatchError } from './errors.js';

/**
 * A semaphore entry carries what it asks for and the permits it was made with in its kind
 * (`semaphore_<count>_<permits>`), which every backend stores with the entry's name: a decision reads
 * every entry's count from the listing alone, without a read per entry.
 */
const SEMAPHORE_KIND = /^semaphore_(\d+)_(\d+)$/;

export interface Ask {
  /** Permits the entry holds or waits for. */
  readonly count: number;
  /** The semaphore's size as the entry's creator gave it. */
  readonly permits: number;
}

export function semaphoreKind(count: number, permits: number): string {
  return `semaphore_${count}_${permits}`;
}

/** Recent kinds parsed: a queue's entries mostly share a few kinds, listed again at every handoff. */
const parsed = new BoundedMap<string, Ask | null>(256);

/** The count and permits of a semaphore entry's kind, or null for any other recipe's kind. */
export function askOf(kind: string): Ask | null {
  let ask = parsed.get(kind);
  if (ask !== undefined) return ask;
  const match = SEMAPHORE_KIND.exec(kind);
  ask = match === null ? null : { count: Number(match[1]), permits: Number(match[2]) };
  parsed.set(kind, ask);
  return ask;
}

/**
 * Strict FIFO: an entry holds while the counts of the entries ordered before it plus its own fit in
 * `permits`, so a large ask at the head blocks the small ones behind it (none starves). The holders
 * are always a prefix of the queue. Two entries at one place (a waiter granted after waiting puts its
 * entry again at its own place before it withdraws the old one) count once.
 *
 * Who to watch, with deletion watches only and no herd:
 * - behind a waiter: that waiter, which puts its entry again at its place once granted (the queue's
 *   `announceGrant`), so its deletion also says "granted";
 * - behind the holders (the first waiter): every holder ahead, since any one release may be enough.
 *
 * Throws `PermitsMismatchError` for an entry ahead made with other permits, or of another recipe.
 */
export function semaphoreDecide(permits: number, what: string): Decide {
  return (queue, self) => {
    // Nothing ahead (the common case): its own count, checked when it asked, always fits.
    if (queue[0] === undefined || queue[0].order >= self.order) return null;
    const own = askOf(self.kind)!.count;
    let used = 0;
    let place: bigint | undefined;
    let previousHolds = true;
    let previous: Entry | undefined;
    const holders: Entry[] = [];
    for (const entry of queue) {
      if (entry.order >= self.order) break;
      const ask = askOf(entry.kind);
      if (ask === null || ask.permits !== permits)
        throw new PermitsMismatchError(what, permits, ask?.permits ?? entry.kind);
      if (entry.order !== place) used += ask.count;
      place = entry.order;
      previousHolds = used <= permits;
      if (previousHolds) holders.push(entry);
      previous = entry;
    }
    if (used + own <= permits) return null;
    return previousHolds ? holders : previous!;
  };
}

/** Which entries of a listing hold (for `baton inspect`): the prefix whose counts fit, counted as above. */
export function semaphoreHolders(queue: readonly Entry[]): Set<Entry> {
  const holders = new Set<Entry>();
  let used = 0;
  let place: bigint | undefined;
  for (const entry of queue) {
    const ask = askOf(entry.kind);
    if (ask === null) break;
    if (entry.order !== place) used += ask.count;
    place = entry.order;
    if (used > ask.permits) break;
    holders.add(entry);
  }
  return holders;
}

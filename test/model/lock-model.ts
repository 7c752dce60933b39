/**
 * The reference model the model-based tests hold the real locks to: per lock name one FIFO queue of
 * entries, granted by the plain rules a user reads in the README, written here without the recipes'
 * code (`recipes/decide.ts`):
 *
 * - an exclusive entry (a mutex, a write lock) is granted when it is first in its queue;
 * - a read is granted when every entry before it is a read;
 * - a downgrade turns a granted write into a granted read at the same place;
 * - a session's end (expiry, close) removes all its entries at once.
 */

export type Kind = 'lock' | 'read' | 'write';
export const KINDS: readonly Kind[] = ['lock', 'read', 'write'];

export interface ModelEntry {
  /** Unique within one run: how the real side finds its acquisition. */
  readonly id: number;
  readonly lock: string;
  /** The session slot that queued it. */
  readonly slot: number;
  readonly kind: Kind;
  /** Place in its queue: the order it queued in; a downgrade's read keeps its write's. */
  readonly place: number;
  granted: boolean;
}

export class LockModel {
  readonly locks: readonly string[];
  readonly slots: number;
  readonly #queues = new Map<string, ModelEntry[]>();
  #nextId = 1;
  #nextPlace = 1;

  constructor(locks: readonly string[], slots: number) {
    this.locks = locks;
    this.slots = slots;
    for (const lock of locks) this.#queues.set(lock, []);
  }

  queue(lock: string): readonly ModelEntry[] {
    return this.#queues.get(lock)!;
  }

  /** Every entry of every queue, queue by queue, in order. */
  entries(): ModelEntry[] {
    return this.locks.flatMap((lock) => this.queue(lock));
  }

  granted(): ModelEntry[] {
    return this.entries().filter((entry) => entry.granted);
  }

  waiting(): ModelEntry[] {
    return this.entries().filter((entry) => !entry.granted);
  }

  /** A new entry at the tail of `lock`'s queue, granted if the rules grant it now. */
  enqueue(lock: string, slot: number, kind: Kind): ModelEntry {
    const entry: ModelEntry = { id: this.#nextId++, lock, slot, kind, place: this.#nextPlace++, granted: false };
    this.#queues.get(lock)!.push(entry);
    this.grant();
    return entry;
  }

  /** Whether an entry new at the tail of `lock`'s queue would be granted at once (what tryAcquire gets). */
  grantableAtTail(lock: string, kind: Kind): boolean {
    const queue = this.queue(lock);
    return kind === 'read' ? queue.every((entry) => entry.kind === 'read') : queue.length === 0;
  }

  remove(id: number): void {
    for (const queue of this.#queues.values()) {
      const at = queue.findIndex((entry) => entry.id === id);
      if (at >= 0) queue.splice(at, 1);
    }
    this.grant();
  }

  /** Ends a session slot's current session: all its entries go at once. */
  endSession(slot: number): ModelEntry[] {
    const gone = this.entries().filter((entry) => entry.slot === slot);
    for (const queue of this.#queues.values()) {
      for (let i = queue.length - 1; i >= 0; i -= 1) if (queue[i]!.slot === slot) queue.splice(i, 1);
    }
    this.grant();
    return gone;
  }

  /** A granted write becomes a granted read at its place; the reads right behind it join it. */
  downgrade(id: number): ModelEntry {
    const queue = this.#queues.get(this.entries().find((entry) => entry.id === id)!.lock)!;
    const at = queue.findIndex((entry) => entry.id === id);
    const write = queue[at]!;
    const read: ModelEntry = {
      id: this.#nextId++,
      lock: write.lock,
      slot: write.slot,
      kind: 'read',
      place: write.place,
      granted: true,
    };
    queue.splice(at, 1, read);
    this.grant();
    return read;
  }

  /** Grants whatever the rules grant; a granted entry stays granted until it leaves. */
  grant(): void {
    for (const queue of this.#queues.values()) {
      queue.forEach((entry, index) => {
        const before = queue.slice(0, index);
        if (entry.kind === 'read' ? before.every((other) => other.kind === 'read') : index === 0) entry.granted = true;
      });
    }
  }
}

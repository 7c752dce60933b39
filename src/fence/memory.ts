import type { CompareAndSetStore, FencedRecord } from './cas.js';

/**
 * A `CompareAndSetStore` in this process's memory, for tests and demos: versions are a counter, and
 * each call runs to completion before the next (JavaScript's one thread makes it atomic).
 */
export class MemoryCasStore<V> implements CompareAndSetStore<V> {
  readonly #records = new Map<string, FencedRecord<V>>();
  #nextVersion = 1;

  /** The record at `key`, or undefined. */
  async read(key: string): Promise<FencedRecord<V> | undefined> {
    return this.#records.get(key);
  }

  /** Writes `next` if the record at `key` is still at `version` (undefined: absent). */
  async compareAndSet(key: string, version: string | undefined, next: { value: V; mark: bigint }): Promise<boolean> {
    if (this.#records.get(key)?.version !== version) return false;
    this.#records.set(key, { value: next.value, mark: next.mark, version: String(this.#nextVersion++) });
    return true;
  }

  /** Every key and its record, for a test or a demo to look at. */
  entries(): IterableIterator<[string, FencedRecord<V>]> {
    return this.#records.entries();
  }
}

/**
 * A map that keeps at most `limit` keys, forgetting the oldest first: the caches of parsed names, key
 * buffers and per-queue records that a long-lived session would otherwise grow without end. Oldest
 * means first set, unless `touch` made a key the most recent again (least recently used).
 */
export class BoundedMap<K, V> {
  readonly #map = new Map<K, V>();
  readonly #limit: number;
  readonly #onEvict: ((key: K, value: V) => void) | undefined;

  /** `onEvict`, if given, is told of each key forgotten to make room (not of one `delete` removes). */
  constructor(limit: number, onEvict?: (key: K, value: V) => void) {
    this.#limit = limit;
    this.#onEvict = onEvict;
  }

  get size(): number {
    return this.#map.size;
  }

  get(key: K): V | undefined {
    return this.#map.get(key);
  }

  has(key: K): boolean {
    return this.#map.has(key);
  }

  /** The value of `key`, made the most recent key (it is forgotten last). */
  touch(key: K): V | undefined {
    const value = this.#map.get(key);
    if (value !== undefined) {
      this.#map.delete(key);
      this.#map.set(key, value);
    }
    return value;
  }

  /** Sets `key` (a new key is the most recent), then forgets the oldest keys beyond the limit. */
  set(key: K, value: V): void {
    this.#map.set(key, value);
    for (const [oldest, old] of this.#map) {
      if (this.#map.size <= this.#limit) break;
      this.#map.delete(oldest);
      this.#onEvict?.(oldest, old);
    }
  }

  /** The value of `key`, made by `make` and set if there was none. */
  getOrSet(key: K, make: () => V): V {
    let value = this.#map.get(key);
    if (value === undefined) this.set(key, (value = make()));
    return value;
  }

  delete(key: K): boolean {
    return this.#map.delete(key);
  }

  keys(): IterableIterator<K> {
    return this.#map.keys();
  }

  values(): IterableIterator<V> {
    return this.#map.values();
  }

  entries(): IterableIterator<[K, V]> {
    return this.#map.entries();
  }

  [Symbol.iterator](): IterableIterator<[K, V]> {
    return this.#map.entries();
  }

  clear(): void {
    this.#map.clear();
  }
}

import type { Entry } from '../../../recipes/contract.js';

export interface StoredEntry extends Entry {
  readonly owner: string;
}

/**
 * The shared state of one `memory://name`: every session opened on that name sees the same queues.
 * Order and fencing tokens come from one store-wide revision counter, so they keep increasing even
 * when a queue empties and starts again, like etcd's revisions.
 */
export class MemoryStore {
  #revision = 0n;
  #nextSession = 1;
  readonly #queues = new Map<string, Map<string, StoredEntry>>();
  readonly #watchers = new Map<string, Set<() => void>>();

  newSessionId(): string {
    return `memory-${this.#nextSession++}`;
  }

  add(queue: string, kind: string, owner: string): StoredEntry {
    const revision = ++this.#revision;
    const entry: StoredEntry = { queue, key: `${queue}/${owner}-${kind}-${revision}`, kind, order: revision, fencingToken: revision, owner };
    let entries = this.#queues.get(queue);
    if (entries === undefined) this.#queues.set(queue, (entries = new Map()));
    entries.set(entry.key, entry);
    return entry;
  }

  /** Entries in order: a Map keeps insertion order, and insertion follows the revision. */
  list(queue: string): StoredEntry[] {
    return [...(this.#queues.get(queue)?.values() ?? [])];
  }

  get(queue: string, key: string): StoredEntry | undefined {
    return this.#queues.get(queue)?.get(key);
  }

  remove(queue: string, key: string): void {
    const entries = this.#queues.get(queue);
    if (entries === undefined || !entries.delete(key)) return;
    if (entries.size === 0) this.#queues.delete(queue);
    const watchers = this.#watchers.get(key);
    if (watchers === undefined) return;
    this.#watchers.delete(key);
    // Deliver like a server notification: after the deleting call has returned.
    queueMicrotask(() => {
      for (const notify of watchers) notify();
    });
  }

  removeOwnedBy(owner: string): void {
    for (const [queue, entries] of [...this.#queues]) {
      for (const entry of [...entries.values()]) if (entry.owner === owner) this.remove(queue, entry.key);
    }
  }

  /** Registers a one-shot deletion watcher; returns a function that unregisters it. */
  watch(key: string, notify: () => void): () => void {
    let watchers = this.#watchers.get(key);
    if (watchers === undefined) this.#watchers.set(key, (watchers = new Set()));
    watchers.add(notify);
    return () => {
      watchers.delete(notify);
      if (watchers.size === 0 && this.#watchers.get(key) === watchers) this.#watchers.delete(key);
    };
  }

  /** How many deletion watchers are registered (for tests: nothing may be left behind). */
  get watcherCount(): number {
    let count = 0;
    for (const watchers of this.#watchers.values()) count += watchers.size;
    return count;
  }

  /** Every key in the store under a queue-name prefix (for tests: nothing may be left behind). */
  keysUnder(prefix: string): string[] {
    const keys: string[] = [];
    for (const [queue, entries] of this.#queues) {
      if (queue === prefix || queue.startsWith(`${prefix}/`)) keys.push(...entries.keys());
    }
    return keys;
  }
}

const stores = new Map<string, MemoryStore>();

export function memoryStore(name: string): MemoryStore {
  let store = stores.get(name);
  if (store === undefined) stores.set(name, (store = new MemoryStore()));
  return store;
}

import type { Ahead, Entry } from '../../../recipes/contract.js';

export interface StoredEntry extends Entry {
  readonly owner: string;
  readonly data: string;
  /** Date.now() when it was added. */
  readonly createdAt: number;
}

/**
 * The shared state of one `memory://name`: every session opened on that name sees the same queues.
 * Order and fencing tokens come from one store-wide revision counter, so they keep increasing even
 * when a queue empties and starts again, like etcd's revisions.
 */
export class MemoryStore {
  #notificationsSent = 0;

  /** How many watch notifications the store has sent, as a server's metrics would count them. */
  get notificationsSent(): number {
    return this.#notificationsSent;
  }

  #revision = 0n;
  #nextSession = 1;
  readonly #queues = new Map<string, Map<string, StoredEntry>>();
  readonly #watchers = new Map<string, Set<() => void>>();
  /** One-shot watchers of a queue directory's membership, keyed by the directory. */
  readonly #queueWatchers = new Map<string, Set<() => void>>();

  newSessionId(): string {
    return `memory-${this.#nextSession++}`;
  }

  /** `dir` is the namespaced queue path the entry is filed under; `queue` the lock name it reports. */
  add(dir: string, queue: string, kind: string, owner: string, at?: Entry, data = ''): StoredEntry {
    const revision = ++this.#revision;
    const key = `${dir}/${owner}-${kind}-${revision}`;
    const order = at?.order ?? revision;
    const entry: StoredEntry = { queue, key, kind, order, fencingToken: order, owner, data, createdAt: Date.now() };
    let entries = this.#queues.get(dir);
    if (entries === undefined) this.#queues.set(dir, (entries = new Map()));
    entries.set(entry.key, entry);
    this.#notify(this.#queueWatchers, dir);
    return entry;
  }

  /** Entries in order; one placed `at` another sorts right after it (a stable sort keeps insertion order). */
  list(dir: string): StoredEntry[] {
    return [...(this.#queues.get(dir)?.values() ?? [])].sort((a, b) =>
      a.order < b.order ? -1 : a.order > b.order ? 1 : 0,
    );
  }

  /**
   * The entries ordered before `self`, nearest first, at most `limit`, and whether `self` is there:
   * `listBefore` as a server would answer it. Whole queues are sorted: memory queues are small.
   */
  before(dir: string, self: Entry, limit: number | undefined): Ahead {
    const queue = this.list(dir);
    const at = queue.findIndex((e) => e.key === self.key);
    if (at < 0) return { present: false, entries: [], more: false };
    const ahead = queue.slice(0, at).reverse();
    const entries = limit === undefined ? ahead : ahead.slice(0, limit);
    return { present: true, entries, more: entries.length < ahead.length };
  }

  get(key: string): StoredEntry | undefined {
    return this.#queues.get(dirOf(key))?.get(key);
  }

  remove(key: string): void {
    const dir = dirOf(key);
    const entries = this.#queues.get(dir);
    if (entries === undefined || !entries.delete(key)) return;
    if (entries.size === 0) this.#queues.delete(dir);
    this.#notify(this.#watchers, key);
    this.#notify(this.#queueWatchers, dir);
  }

  /** Fires and forgets the one-shot watchers of `path`, like a server notification: after the call returned. */
  #notify(registry: Map<string, Set<() => void>>, path: string): void {
    const watchers = registry.get(path);
    if (watchers === undefined) return;
    registry.delete(path);
    queueMicrotask(() => {
      for (const notify of watchers) {
        this.#notificationsSent += 1;
        notify();
      }
    });
  }

  removeOwnedBy(owner: string): void {
    for (const entries of [...this.#queues.values()]) {
      for (const entry of [...entries.values()]) if (entry.owner === owner) this.remove(entry.key);
    }
  }

  /** Registers a one-shot deletion watcher; returns a function that unregisters it. */
  watch(key: string, notify: () => void): () => void {
    return register(this.#watchers, key, notify);
  }

  /** Registers a one-shot watcher of the next entry added to or removed from `dir`. */
  watchQueue(dir: string, notify: () => void): () => void {
    return register(this.#queueWatchers, dir, notify);
  }

  /** Watched keys and queues under a path prefix (for tests: nothing may be left behind). */
  watchedUnder(prefix: string): string[] {
    return [...this.#watchers.keys(), ...this.#queueWatchers.keys()].filter((key) => key.startsWith(`${prefix}/`));
  }

  /** Every entry key under a path prefix (for tests: nothing may be left behind). */
  keysUnder(prefix: string): string[] {
    const keys: string[] = [];
    for (const [dir, entries] of this.#queues) {
      if (dir === prefix || dir.startsWith(`${prefix}/`)) keys.push(...entries.keys());
    }
    return keys;
  }
}

function register(registry: Map<string, Set<() => void>>, path: string, notify: () => void): () => void {
  let watchers = registry.get(path);
  if (watchers === undefined) registry.set(path, (watchers = new Set()));
  watchers.add(notify);
  return () => {
    watchers.delete(notify);
    if (watchers.size === 0 && registry.get(path) === watchers) registry.delete(path);
  };
}

function dirOf(key: string): string {
  return key.slice(0, key.lastIndexOf('/'));
}

const stores = new Map<string, MemoryStore>();

export function memoryStore(name: string): MemoryStore {
  let store = stores.get(name);
  if (store === undefined) stores.set(name, (store = new MemoryStore()));
  return store;
}

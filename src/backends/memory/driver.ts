import type {
  Abortable,
  Ahead,
  AheadAsked,
  Enqueued,
  EnqueuedAhead,
  Entry,
  GuardedOp,
} from '../../../recipes/contract.js';
import { moversAhead } from '../../../recipes/decide.js';
import { ClosedError, SessionLostError } from '../../../recipes/errors.js';
import type { Driver, DriverEvents, EntryInfo } from '../../driver-port.js';
import { sameEntries } from '../waiters.js';
import { memoryGuardedRead, memoryGuardedWrite } from './guarded.js';
import type { MemoryStore } from './store.js';

/** A session on an in-process store. Same contract as the server backends, for demos and unit tests. */
export class MemoryDriver implements Driver {
  /** None: no other client shares an in-process store. */
  readonly dialects: readonly string[] = [];
  readonly id: string;
  readonly timeoutMs = Number.POSITIVE_INFINITY;
  readonly openedAt = performance.now();
  readonly #store: MemoryStore;
  readonly #namespace: string;
  #status: 'open' | 'lost' | 'closed' = 'open';
  #events: DriverEvents | undefined;

  constructor(store: MemoryStore, namespace: string) {
    this.#store = store;
    this.#namespace = namespace;
    this.id = store.newSessionId();
  }

  attach(events: DriverEvents): void {
    this.#events = events;
  }

  abandon(): void {
    this.expire();
  }

  async enqueue(queue: string, kind: string, at?: Entry, data?: string, _dialect?: string): Promise<Enqueued> {
    await this.#turn();
    const dir = this.#dir(queue);
    const entry = this.#store.add(dir, queue, kind, this.id, at, data);
    return { entry, queue: this.#store.list(dir) };
  }

  async enqueueAhead(queue: string, kind: string, { page }: AheadAsked, data?: string): Promise<EnqueuedAhead> {
    await this.#turn();
    const dir = this.#dir(queue);
    const entry = this.#store.add(dir, queue, kind, this.id, undefined, data);
    // At the tail: every other entry is ahead of the new one.
    const queued = this.#store.list(dir);
    const ahead = queued.slice(0, -1).reverse();
    const movers = moversAhead(queued, entry);
    return { entry, ahead: ahead.slice(0, page), more: ahead.length > page, position: ahead.length, movers };
  }

  async list(queue: string): Promise<readonly Entry[]> {
    await this.#turn();
    return this.#store.list(this.#dir(queue));
  }

  async listBefore(queue: string, self: Entry, limit?: number): Promise<Ahead> {
    await this.#turn();
    return this.#store.before(this.#dir(queue), self, limit);
  }

  async waitGone(entry: Entry, signal: Abortable): Promise<void> {
    await this.#turn();
    signal.throwIfAborted();
    if (this.#store.get(entry.key) === undefined) return;
    await notified(signal, (notify) => this.#store.watch(entry.key, notify));
  }

  async waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    await this.#turn();
    signal.throwIfAborted();
    const dir = this.#dir(queue);
    if (!sameEntries(this.#store.list(dir), seen)) return;
    await notified(signal, (notify) => this.#store.watchQueue(dir, notify));
  }

  async withdraw(entry: Entry): Promise<void> {
    await Promise.resolve();
    if (this.#status !== 'open') return; // the entries went with the session
    if (this.#store.get(entry.key)?.owner === this.id) this.#store.remove(entry.key);
  }

  async read(entry: Entry): Promise<string | null> {
    await this.#turn();
    return this.#store.get(entry.key)?.data ?? null;
  }

  async describe(queue: string): Promise<EntryInfo[]> {
    await this.#turn();
    return this.#store
      .list(this.#dir(queue))
      .map(({ owner, data, createdAt, ...entry }) => ({ entry, owner, client: 'baton', data, createdAt }));
  }

  async confirm(entry: Entry): Promise<boolean> {
    await this.#turn();
    return this.#store.get(entry.key)?.owner === this.id;
  }

  /** An operator's force release: any session's entry of this store, in the entry's own queue. */
  async revoke(entry: Entry): Promise<boolean> {
    await this.#turn();
    const found = this.#store.get(entry.key);
    if (found === undefined || !entry.key.startsWith(`${this.#dir(entry.queue)}/`)) return false;
    this.#store.remove(entry.key);
    return true;
  }

  /** The server side ends the session (`abandon`, and `expireMemorySession` of `baton-locks/testing`), as a ZooKeeper expiry or an etcd lease revoke would. */
  expire(): void {
    if (this.#status !== 'open') return;
    this.#status = 'lost';
    this.#store.removeOwnedBy(this.id);
    this.#events?.status('lost', new SessionLostError('the memory session was expired'));
  }

  async close(): Promise<void> {
    if (this.#status === 'open') this.#store.removeOwnedBy(this.id);
    this.#status = 'closed';
  }

  #dir(queue: string): string {
    return `${this.#namespace}/${queue}`;
  }

  /** Every call yields once, as a network call would, so callers never rely on synchronous effects. */
  async #turn(): Promise<void> {
    await Promise.resolve();
    if (this.#status === 'lost') throw new SessionLostError('the memory session was expired');
    if (this.#status === 'closed') throw new ClosedError();
  }

  async guardedWrite(entry: Entry, op: GuardedOp): Promise<boolean> {
    await this.#turn();
    return memoryGuardedWrite(this.#store, this.id, this.#dir(entry.queue), entry, op);
  }

  async guardedRead(queue: string, name: string): Promise<string | null> {
    await this.#turn();
    return memoryGuardedRead(this.#store, this.#dir(queue), name);
  }
}

/** Waits for a one-shot store watcher to fire; an abort unregisters it and rejects with the reason. */
function notified(signal: Abortable, watch: (notify: () => void) => () => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const letGo = holdProcessOpen();
    const onAbort = (): void => {
      unwatch();
      letGo();
      reject(signal.reason);
    };
    const unwatch = watch(() => {
      signal.removeEventListener('abort', onAbort);
      letGo();
      resolve();
    });
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** Memory waits in progress in this process, and the timer that keeps the process alive while any is. */
let waits = 0;
let keepAlive: NodeJS.Timeout | undefined;

/**
 * Keeps the process alive until the returned function is called, as a socket to a server does for a
 * waiter on the other backends: a memory waiter may be all that is pending (its timeout's timer, such
 * as `AbortSignal.timeout`'s, does not hold a process up), and the process would end under it.
 */
function holdProcessOpen(): () => void {
  if (waits++ === 0) keepAlive = setInterval(() => undefined, 2 ** 30);
  let held = true;
  return () => {
    if (!held) return;
    held = false;
    if (--waits === 0) clearInterval(keepAlive);
  };
}

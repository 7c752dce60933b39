import type { Enqueued, Entry } from '../../../recipes/contract.js';
import { BackendError } from '../../../recipes/errors.js';
import type { Driver } from '../../driver-port.js';
import { entriesOf, type QueueRow } from './entry.js';

/** What the own entries need of their driver. */
export interface OwnEntriesHost {
  /** The session's row id: its entries' keys start with `s<session>.`. */
  readonly session: string;
  /** Where the orphans it deletes are counted (each backend's probe counters have the field). */
  readonly counters: { orphansRemoved: number };
  /** Whether the session is still open (a late enqueue's key is retired only while it is). */
  isOpen(): boolean;
  /** The driver's timeout, its withdraw (orphans, retired keys) and its listing (which sweeps our orphans). */
  readonly driver: Pick<Driver, 'timeoutMs' | 'withdraw' | 'list'>;
}

/**
 * The session's own entries: the keys it knows of (enqueued and not yet withdrawn, or on their way),
 * the keys whose enqueue was sent more than once (their withdraw retires them: see `retired` in the
 * schema), the queues where an enqueue of unknown fate may still be applied late, and the orphan sweep.
 */
export class OwnEntries {
  readonly #host: OwnEntriesHost;
  #count = 0;
  readonly #own = new Set<string>();
  readonly #enqueuing = new Set<string>();
  /** Queues where an enqueue of unknown fate may still be applied late, and until when they are looked at. */
  readonly #unsettled = new Map<string, number>();
  readonly #retried = new Set<string>();

  constructor(host: OwnEntriesHost) {
    this.#host = host;
  }

  /** The key of the session's next entry (a sent enqueue carries it, so that a retry finds its row). */
  nextKey(): string {
    return `s${this.#host.session}.${++this.#count}`;
  }

  /**
   * Enqueues the session's next key: `send(key, attempted)` sends the statement (again while it fails
   * on the way, calling `attempted` before each attempt) and answers with the queue's rows;
   * `claimed(key, rows)` runs once the entry is ours. A second attempt means the first may still reach
   * the server later (its connection was dropped while it was on the way): the withdraw of this entry
   * then retires its key, so that it makes no entry again, and the queue is looked at for a while.
   */
  async enqueue<R extends QueueRow>(
    queue: string,
    kind: string,
    send: (key: string, attempted: () => void) => Promise<readonly R[]>,
    claimed?: (key: string, rows: readonly R[]) => void,
  ): Promise<Enqueued> {
    const key = this.nextKey();
    let attempts = 0;
    this.enqueuing(key);
    try {
      const rows = await send(key, () => {
        if (++attempts === 2) this.sentTwice(key);
      });
      const entry = entriesOf(queue, rows).find((e) => e.key === key);
      if (entry === undefined) throw new BackendError(`wrote ${key} but the queue read does not show it`);
      this.claim(key);
      claimed?.(key, rows);
      if (attempts > 1) this.unsettle(queue);
      return { entry, queue: this.listed(queue, rows) };
    } catch (error) {
      this.unsettle(queue); // an attempt may have been applied, or may still be
      // Failed after more than one attempt: an earlier one may still arrive; retire the key now.
      if (this.wasSentTwice(key) && this.#host.isOpen())
        void this.#host.driver.withdraw({ queue, key, kind, order: 0n, fencingToken: 0n }).catch(() => undefined);
      throw error;
    } finally {
      this.settled(key);
    }
  }

  /** An enqueue of `key` is on its way (until `settled`): a listing meanwhile is not to sweep it. */
  enqueuing(key: string): void {
    this.#enqueuing.add(key);
  }

  settled(key: string): void {
    this.#enqueuing.delete(key);
  }

  /** The enqueue of `key` was answered: ours until withdrawn. */
  claim(key: string): void {
    this.#own.add(key);
  }

  /** The withdraw of `key` was answered. */
  forget(key: string): void {
    this.#own.delete(key);
  }

  /** The enqueue of `key` was sent a second time: the first may still reach the server later. */
  sentTwice(key: string): void {
    this.#retried.add(key);
  }

  wasSentTwice(key: string): boolean {
    return this.#retried.has(key);
  }

  /** Whether the withdraw of `key` retires it (its enqueue was sent twice); asked once per withdraw. */
  takeRetired(key: string): boolean {
    return this.#retried.delete(key);
  }

  /** An enqueue of unknown fate: the keep-alive's beat looks at the queue for a while, for a copy applied late. */
  unsettle(queue: string): void {
    this.#unsettled.set(queue, performance.now() + this.#host.driver.timeoutMs * 2);
  }

  /** Looks at the queues where an enqueue of unknown fate may still be applied (their listing sweeps our orphans). */
  settle(): void {
    const now = performance.now();
    for (const [queue, until] of [...this.#unsettled]) {
      if (now > until) this.#unsettled.delete(queue);
      else this.#host.driver.list(queue).catch(() => undefined);
    }
  }

  /**
   * A listing's entries, without this session's orphans, which are deleted on the way: an entry of
   * ours that no handle or waiter stands for can only be an enqueue attempt applied after the session
   * had moved on (its connection dropped while the server still ran it, after a retry that was answered,
   * and after that entry's release). Left, it would hold up everyone queued behind it.
   */
  sweepOrphans(entries: Entry[]): Entry[] {
    const prefix = `s${this.#host.session}.`;
    const orphans = entries.filter(
      (e) => e.key.startsWith(prefix) && !this.#own.has(e.key) && !this.#enqueuing.has(e.key),
    );
    if (orphans.length === 0) return entries;
    for (const orphan of orphans) {
      this.#host.counters.orphansRemoved += 1;
      this.#host.driver.withdraw(orphan).catch(() => undefined);
    }
    return entries.filter((e) => !orphans.includes(e));
  }

  /** A queue's rows as entries, without this session's orphans (see `sweepOrphans`). */
  listed(queue: string, rows: readonly QueueRow[]): Entry[] {
    return this.sweepOrphans(entriesOf(queue, rows));
  }

  /** The session ended: nothing is left to retire. */
  clear(): void {
    this.#retried.clear();
  }
}

import { backoff } from '../../backoff.js';
import type { DriverCore } from '../core.js';
import { serverErrno } from './failures.js';
import type { Link } from './link.js';
import { armStatement, killStatement, threadsStatement } from './statements.js';

/** What the names need of their driver. */
export interface WakeNamesHost {
  readonly core: DriverCore;
  /** The session's main connection, which holds the names. */
  readonly main: Link;
  /** The `GET_LOCK` name of an entry's key. */
  nameOf(key: string): string;
}

/** How many times a name found held elsewhere is tried again (with the project's backoff) before waiters re-read. */
const ATTEMPTS = 10;
/** MySQL's and MariaDB's error for `KILL` of a thread that no longer exists. */
const UNKNOWN_THREAD = 1094;

/**
 * The wake-up names the main connection holds, one per entry from its enqueue to its withdraw. A main
 * connection that broke on the client's side may live on on the server (a partition, a deadline that
 * dropped it), still holding the names: a new one could not take them, and waiters would fall back to
 * re-reads for the rest of the hold. So the former connections' threads still there are killed first (a
 * user may `KILL` its own connections), each known by its id and its client address and port, and every
 * name is checked to be held.
 */
export class WakeNames {
  readonly #host: WakeNamesHost;
  /** The keys of the entries this session holds a name for (enqueued, not yet withdrawn). */
  readonly #keys = new Set<string>();
  #retaking: Promise<void> | undefined;
  #again = false;

  constructor(host: WakeNamesHost) {
    this.#host = host;
  }

  /** An entry enqueued: `armed` is the enqueue's word that its name is held by the main connection. */
  enqueued(key: string, armed: boolean): void {
    this.#keys.add(key);
    if (!armed) this.retake();
  }

  /** An entry withdrawn (its name released by the withdraw). */
  withdrawn(key: string): void {
    this.#keys.delete(key);
  }

  clear(): void {
    this.#keys.clear();
  }

  /** A new main connection, or a name found held elsewhere: end the former threads, take every name again. */
  retake(): void {
    if (this.#retaking !== undefined) {
      this.#again = true;
      return;
    }
    this.#retaking = this.#retakeAll().finally(() => (this.#retaking = undefined));
  }

  async #retakeAll(): Promise<void> {
    for (let attempt = 0; attempt < ATTEMPTS && this.#host.core.isOpen; attempt += 1) {
      this.#again = false;
      const missing = await this.#killFormer()
        .then(() => this.#take())
        .catch(() => 1);
      if (missing === 0 && !this.#again) return;
      await backoff(attempt);
    }
  }

  /**
   * Kills the threads of the former connections that are still there: the same id from the same client
   * address and port (a restarted server gives old ids to other clients' connections).
   */
  async #killFormer(): Promise<void> {
    const { main } = this.#host;
    const former = main.takeFormerThreads();
    if (former.length === 0) return;
    const rows = await main.rows<{ id: number | string; host: string }>(
      threadsStatement(former.length),
      former.map((thread) => thread.id),
    );
    const listed = new Map(rows.map((row) => [Number(row.id), String(row.host)]));
    for (const thread of former) {
      if (listed.get(thread.id) !== thread.host) continue;
      try {
        await main.query(killStatement(thread.id));
      } catch (error) {
        if (serverErrno(error) !== UNKNOWN_THREAD) throw error;
      }
    }
  }

  /** Takes the names, 100 to a statement; resolves with how many are held by another connection. */
  async #take(): Promise<number> {
    const keys = [...this.#keys];
    let missing = 0;
    for (let i = 0; i < keys.length; i += 100) {
      const batch = keys.slice(i, i + 100);
      const names = batch.map((key) => this.#host.nameOf(key));
      const values = names.flatMap((name) => [name, name]);
      const [row] = await this.#host.main.rows(armStatement(batch.length), values);
      for (const [index, key] of batch.entries()) {
        const got = Number(row?.[`a${index}`]) === 1;
        if (!got) missing += 1;
        // Withdrawn while the statement was on its way: its withdraw released nothing of this one.
        else if (!this.#keys.has(key)) await this.#host.main.query('DO RELEASE_LOCK(?)', [names[index]]);
      }
    }
    return missing;
  }
}

import type { Link } from './link.js';

/** What the pool needs: a way to make a wait connection, and to interrupt one's statement. */
export interface WaitPoolHost {
  /** A new connection of the session's (not yet connected). */
  newLink(): Link;
  /** Sends `KILL QUERY <thread>` for a wait that nobody wants any more (on the main connection). */
  kill(threadId: number): Promise<void>;
}

/** One wait on a connection of the pool: its outcome, and a way to end it early. */
export interface PooledWait {
  /** 1: the name was free (taken and given back at once); 0: timed out; null: interrupted. */
  readonly got: Promise<number | null>;
  /** Ends the wait now (`KILL QUERY`); its connection returns to the pool once the statement is over. */
  cancel(): void;
}

/**
 * The session's wait connections: a waiter blocks in `GET_LOCK(<its blocker's name>, seconds)` on one
 * of them, so that the blocker's release (or its connection's end) answers at once. At most `cap` of them,
 * made when first needed and kept for the next wait; beyond the cap a wait gets none (the caller then
 * re-reads at the backstop's pace). A connection whose statement failed is dropped and made again.
 */
export class WaitPool {
  readonly #host: WaitPoolHost;
  readonly #cap: number;
  readonly #idle: Link[] = [];
  readonly #all = new Set<Link>();
  #closed = false;

  constructor(host: WaitPoolHost, cap: number) {
    this.#host = host;
    this.#cap = cap;
  }

  /** Server ids of the pool's connections now up. */
  threadIds(): number[] {
    return [...this.#all].flatMap((link) => (link.threadId === undefined ? [] : [link.threadId]));
  }

  /** Waits up to `seconds` for `name` to be free; undefined when the pool is at its cap (or closed). */
  wait(name: string, seconds: number): PooledWait | undefined {
    const link = this.#take();
    if (link === undefined) return undefined;
    let cancelled = false;
    const got = link
      .rows<{ got: number | string | null }>(
        'SELECT CASE WHEN GET_LOCK(?, ?) = 1 THEN RELEASE_LOCK(?) ELSE 0 END AS got',
        [name, seconds, name],
        Math.ceil(seconds * 1_000) + 5_000,
      )
      .then((rows) => {
        const value = rows[0]?.got;
        return value === null || value === undefined ? null : Number(value);
      });
    const done = got.then(
      () => this.#give(link),
      () => this.#give(link, true),
    );
    void done;
    return {
      got: got.catch(() => null),
      cancel: () => {
        if (cancelled) return;
        cancelled = true;
        const thread = link.threadId;
        if (thread === undefined) link.drop(new Error('wait cancelled'));
        else this.#host.kill(thread).catch(() => link.drop(new Error('wait cancelled')));
      },
    };
  }

  #take(): Link | undefined {
    if (this.#closed) return undefined;
    const idle = this.#idle.pop();
    if (idle !== undefined) return idle;
    if (this.#all.size >= this.#cap) return undefined;
    const link = this.#host.newLink();
    this.#all.add(link);
    return link;
  }

  #give(link: Link, failed = false): void {
    if (this.#closed || link.closed) {
      this.#all.delete(link);
      return;
    }
    if (failed) link.drop(new Error('a wait failed'));
    this.#idle.push(link);
  }

  /** Closes every connection (waits under way fail). */
  async close(): Promise<void> {
    this.#closed = true;
    const links = [...this.#all];
    this.#all.clear();
    this.#idle.length = 0;
    await Promise.all(links.map((link) => link.close()));
  }

  /** Drops every connection at once, without a goodbye. */
  destroy(): void {
    this.#closed = true;
    for (const link of this.#all) link.destroy();
    this.#all.clear();
    this.#idle.length = 0;
  }
}

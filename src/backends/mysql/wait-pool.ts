import { serverErrno } from './failures.js';
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
  /** 1: the name was free (taken and given back at once); 0: timed out (or no connection came in time); null: interrupted. */
  readonly got: Promise<number | null>;
  /** Ends the wait now (`KILL QUERY` if it runs); its connection returns to the pool once the statement is over. */
  cancel(): void;
}

/** MySQL's and MariaDB's error for a statement ended by `KILL QUERY`: the connection itself is fine. */
const INTERRUPTED = 1317;

/** A wait asked of the pool: queued for a connection, or running on one. */
interface Job {
  readonly name: string;
  /** Its blocker's place in its queue (the entry's order): the smaller, the sooner its release comes. */
  readonly rank: bigint;
  /** `performance.now()` past which the wait is over, connection or not. */
  readonly deadline: number;
  readonly settle: (value: number | null) => void;
  link: Link | undefined;
  /** Its connection is being taken for a nearer wait (a `KILL QUERY` is on its way). */
  preempted: boolean;
  cancelled: boolean;
  done: boolean;
  killing: Promise<void> | undefined;
  expiry: ReturnType<typeof setTimeout> | undefined;
}

/** Converts a wait's seconds into the `GET_LOCK` timeout the server reads as meant (get-lock-timeout.ts). */
export type GetLockTimeout = (seconds: number) => number;

/**
 * The session's wait connections: a waiter blocks in `GET_LOCK(<its blocker's name>, seconds)` on one
 * of them, so that the blocker's release (or its connection's end) answers at once. At most `cap` of
 * them, made when first needed and kept for the next wait. When more waits are asked than there are
 * connections, the connections go to the waits whose blockers are nearest the head of their queues
 * (smallest order): those releases come first. A free connection goes at once to the nearest queued
 * wait, and a nearer wait that arrives takes the connection of the farthest one running (`KILL QUERY`),
 * which is queued again. A wait that gets no connection before its time is up ends with 0 (the caller
 * re-reads: the backstop). A connection whose statement failed is dropped and made again.
 */
export class WaitPool {
  readonly #host: WaitPoolHost;
  readonly #cap: number;
  readonly #getLockTimeout: GetLockTimeout;
  readonly #idle: Link[] = [];
  readonly #all = new Set<Link>();
  readonly #queued: Job[] = [];
  readonly #running = new Set<Job>();
  #closed = false;

  constructor(host: WaitPoolHost, cap: number, getLockTimeout: GetLockTimeout = (seconds) => seconds) {
    this.#host = host;
    this.#cap = cap;
    this.#getLockTimeout = getLockTimeout;
  }

  /** Server ids of the pool's connections now up. */
  threadIds(): number[] {
    return [...this.#all].flatMap((link) => (link.threadId === undefined ? [] : [link.threadId]));
  }

  /** Waits up to `seconds` for `name` to be free, `rank` its blocker's order; undefined once closed. */
  wait(name: string, seconds: number, rank: bigint): PooledWait | undefined {
    if (this.#closed) return undefined;
    let settle!: (value: number | null) => void;
    const got = new Promise<number | null>((resolve) => (settle = resolve));
    const job: Job = {
      name,
      rank,
      deadline: performance.now() + seconds * 1_000,
      settle: (value) => {
        if (job.done) return;
        job.done = true;
        clearTimeout(job.expiry);
        settle(value);
      },
      link: undefined,
      preempted: false,
      cancelled: false,
      done: false,
      killing: undefined,
      expiry: undefined,
    };
    this.#enqueue(job);
    this.#dispatch();
    return { got, cancel: () => this.#cancel(job) };
  }

  /** Queues a job for a connection, until its deadline. */
  #enqueue(job: Job): void {
    this.#queued.push(job);
    job.expiry = setTimeout(
      () => {
        this.#unqueue(job);
        job.settle(0);
      },
      Math.max(0, job.deadline - performance.now()),
    );
  }

  #unqueue(job: Job): boolean {
    const at = this.#queued.indexOf(job);
    if (at >= 0) this.#queued.splice(at, 1);
    clearTimeout(job.expiry);
    return at >= 0;
  }

  #cancel(job: Job): void {
    if (job.done || job.cancelled) return;
    job.cancelled = true;
    if (this.#unqueue(job)) job.settle(null);
    else this.#interrupt(job);
  }

  /** Ends a running job's statement with `KILL QUERY` (a link without a connection is dropped instead). */
  #interrupt(job: Job): void {
    const link = job.link;
    if (link === undefined || job.killing !== undefined) return;
    const thread = link.threadId;
    if (thread === undefined) {
      link.drop(new Error('wait interrupted'));
      return;
    }
    job.killing = this.#host.kill(thread).catch(() => link.drop(new Error('wait interrupted')));
  }

  /** Gives free connections to the nearest queued waits, and takes the farthest running ones' for nearer ones. */
  #dispatch(): void {
    if (this.#closed) return;
    this.#queued.sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0));
    while (this.#queued.length > 0) {
      const link = this.#free();
      if (link === undefined) break;
      this.#start(this.#queued.shift()!, link);
    }
    // Connections already on their way back (a wait interrupted) go to the nearest queued ones.
    const coming = [...this.#running].filter((job) => job.preempted || job.cancelled).length;
    const farthest = [...this.#running]
      .filter((job) => !job.preempted && !job.cancelled)
      .sort((a, b) => (a.rank > b.rank ? -1 : a.rank < b.rank ? 1 : 0));
    for (const [index, job] of this.#queued.slice(coming).entries()) {
      const victim = farthest[index];
      if (victim === undefined || victim.rank <= job.rank) break;
      victim.preempted = true;
      this.#interrupt(victim);
    }
  }

  #free(): Link | undefined {
    const idle = this.#idle.pop();
    if (idle !== undefined) return idle;
    if (this.#all.size >= this.#cap) return undefined;
    const link = this.#host.newLink();
    this.#all.add(link);
    return link;
  }

  #start(job: Job, link: Link): void {
    clearTimeout(job.expiry);
    const left = (job.deadline - performance.now()) / 1_000;
    if (left <= 0) {
      job.settle(0);
      this.#give(link);
      return;
    }
    job.link = link;
    this.#running.add(job);
    const seconds = this.#getLockTimeout(left);
    link
      .rows<{ got: number | string | null }>(
        'SELECT CASE WHEN GET_LOCK(?, ?) = 1 THEN RELEASE_LOCK(?) ELSE 0 END AS got',
        [job.name, seconds, job.name],
        Math.ceil(seconds * 1_000) + 5_000,
      )
      .then(
        (rows) => {
          const value = rows[0]?.got;
          this.#finished(job, link, value === null || value === undefined ? null : Number(value));
        },
        (error: unknown) => this.#finished(job, link, null, serverErrno(error) !== INTERRUPTED),
      );
  }

  /** A job's statement is over: a preempted job that did not get its name is queued again. */
  #finished(job: Job, link: Link, value: number | null, failed = false): void {
    this.#running.delete(job);
    job.link = undefined;
    const killing = job.killing ?? Promise.resolve();
    job.killing = undefined;
    if (job.preempted && !job.cancelled && value !== 1 && !this.#closed && !job.done) {
      job.preempted = false;
      this.#enqueue(job);
    } else job.settle(value);
    // Given back only once its KILL QUERY is answered: it must not end the next wait's statement.
    void killing.then(() => this.#give(link, failed));
  }

  #give(link: Link, failed = false): void {
    if (this.#closed || link.closed) {
      this.#all.delete(link);
      return;
    }
    if (failed) link.drop(new Error('a wait failed'));
    this.#idle.push(link);
    this.#dispatch();
  }

  #endAll(): void {
    this.#closed = true;
    for (const job of this.#queued.splice(0)) job.settle(null);
    for (const job of this.#running) job.settle(null);
    this.#running.clear();
    this.#all.clear();
    this.#idle.length = 0;
  }

  /** Closes every connection (waits under way end with null). */
  async close(): Promise<void> {
    const links = [...this.#all];
    this.#endAll();
    await Promise.all(links.map((link) => link.close()));
  }

  /** Drops every connection at once, without a goodbye. */
  destroy(): void {
    const links = [...this.#all];
    this.#endAll();
    for (const link of links) link.destroy();
  }
}

import type { Ahead, Enqueued, Entry, GuardedOp } from '../../../recipes/contract.js';
import { backoff } from '../../backoff.js';
import type { Driver, EntryInfo } from '../../driver-port.js';
import { holdCheckEveryMs } from '../../timing.js';
import { DriverCore } from '../core.js';
import { countWatch } from '../probe.js';
import { fromPromise } from '../requests.js';
import { type SessionLink, SqlDriverBase } from '../sql/driver-base.js';
import { describedOf, type DescribedRow, type QueueRow, SqlEntry } from '../sql/entry.js';
import { KeepAlive } from '../sql/keepalive.js';
import { OwnEntries } from '../sql/own-entries.js';
import { mysqlFailures } from './failures.js';
import { getLockTimeout } from './get-lock-timeout.js';
import { type GuardedHost, mysqlGuardedRead, mysqlGuardedWrite } from './guarded.js';
import { Link, type Row } from './link.js';
import { ListBefore } from './list-before.js';
import {
  attemptMs,
  connectionConfig,
  loadMysql2,
  lockNameOf,
  type MysqlDriverOptions,
  openSession,
  setupStatement,
} from './open.js';
import { type MysqlCounters, mysqlCounters, type MysqlProbe } from './probe.js';
import { mysqlRevoke } from './revoke.js';
import { STATEMENTS } from './statements.js';
import { WaitPool } from './wait-pool.js';
import { WakeNames } from './wake-names.js';
import { Watches } from './watches.js';

export type { MysqlDriverOptions } from './open.js';

/** How many wait connections a session keeps at most; waits beyond them re-read at the backstop's pace. */
export const WAIT_POOL_CAP = 4;

/**
 * How long a waiter blocks in `GET_LOCK` before it reads its blocker's row again: half the session's
 * hold check, so that an entry deleted by someone else (whose name its holder's connection still holds)
 * is seen by its waiter before its holder's session notices the loss, as a notification would.
 */
export function waitPaceMs(timeoutMs: number): number {
  return Math.max(Math.floor(holdCheckEveryMs(timeoutMs) / 2), 50);
}

/** A session's id as users see it (`session.id`, `baton inspect`), from its row's id. */
export function mysqlSessionIdOf(row: string): string {
  return `my-${row}`;
}

/** The row id of a session id (`my-<n>`). */
export function mysqlSessionRowOf(id: string): string {
  return id.replace(/^my-/, '');
}

/**
 * The MySQL/MariaDB backend on mysql2: a session is a row of `baton_sessions` whose lease the server's
 * clock times, renewed by a heartbeat on a connection of its own (renewals never wait behind requests);
 * an entry is a row of `baton_entries` owned by it, whose `GET_LOCK` name the main connection (the
 * requests' one) holds from the enqueue until the entry's withdraw (see wake-names.ts), so that a waiter
 * blocked on that name in the wait pool is answered at its release. This file holds the contract's
 * requests (those both SQL backends make alike are in sql/driver-base.ts); the rest is in the files
 * beside it and in sql/.
 */
export class MysqlDriver extends SqlDriverBase implements Driver {
  readonly id: string;
  readonly timeoutMs: number;
  readonly openedAt: number;
  readonly #session: string;
  readonly #namespace: string;
  readonly #database: string;
  readonly #main: Link;
  readonly #beat: Link;
  protected readonly core: DriverCore;
  protected readonly counters: MysqlCounters;
  protected readonly own: OwnEntries;
  readonly #pool: WaitPool;
  protected readonly waits: Watches;
  protected readonly keepAlive: KeepAlive;
  readonly #ahead: ListBefore;
  #reconnecting = false;
  readonly #names: WakeNames;

  static async open(options: MysqlDriverOptions, probe?: MysqlProbe): Promise<MysqlDriver> {
    let driver: MysqlDriver | undefined;
    const opened = await openSession(options, {
      main: {
        up: (again) => {
          if (again && driver !== undefined && driver.core.isOpen) driver.#names.retake();
        },
        // Made again soon, not at the next request: its entries' names are to be held again.
        down: () => {
          if (driver !== undefined) driver.#reconnectMain();
        },
      },
      beat: {
        down: () => {
          if (driver !== undefined) driver.keepAlive.down();
        },
      },
    });
    const create = await loadMysql2();
    driver = new MysqlDriver(opened, options, probe, () => {
      const config = connectionConfig(options.url, options.tls);
      const statementMs = attemptMs(options.sessionTimeoutMs);
      return new Link(create, config, statementMs, setupStatement(statementMs));
    });
    return driver;
  }

  private constructor(
    opened: Awaited<ReturnType<typeof openSession>>,
    options: MysqlDriverOptions,
    probe: MysqlProbe | undefined,
    newLink: () => Link,
  ) {
    super();
    this.#session = opened.session;
    this.id = mysqlSessionIdOf(opened.session);
    this.timeoutMs = options.sessionTimeoutMs;
    this.openedAt = opened.openedAt;
    this.#main = opened.main;
    this.#beat = opened.beat;
    this.#namespace = options.url.namespace;
    this.#database = options.url.database;
    this.counters = probe?.counters ?? mysqlCounters();
    this.#pool = new WaitPool(
      {
        newLink,
        kill: async (thread) => {
          this.counters.killedWaits += 1;
          await this.#main.query(`KILL QUERY ${Math.trunc(thread)}`);
        },
      },
      WAIT_POOL_CAP,
      (seconds) => getLockTimeout(opened.flavour, seconds),
    );
    this.core = new DriverCore(mysqlFailures(this.id), {
      onEnd: (reason) => this.#onEnd(reason),
      onLost: () => this.dropLinks(),
    });
    this.own = new OwnEntries({
      session: this.#session,
      counters: this.counters,
      isOpen: () => this.core.isOpen,
      driver: this,
    });
    const watches = probe?.watches;
    this.waits = new Watches(
      {
        core: this.core,
        pool: this.#pool,
        namespace: this.#namespace,
        counters: this.counters,
        nameOf: (key) => lockNameOf(this.#database, key),
        live: (keys) => this.#live(keys),
        list: (queue) => this.list(queue),
        ...(watches === undefined ? {} : { watched: (tag: string, delta: 1 | -1) => countWatch(watches, tag, delta) }),
      },
      waitPaceMs(this.timeoutMs),
    );
    probe?.expose({
      mainThreadId: () => this.#main.threadId,
      beatThreadId: () => this.#beat.threadId,
      waitThreadIds: () => this.#pool.threadIds(),
    });
    this.#names = new WakeNames({
      core: this.core,
      main: this.#main,
      nameOf: (key) => lockNameOf(this.#database, key),
    });
    this.#ahead = new ListBefore({
      namespace: this.#namespace,
      counters: this.counters,
      call: (text, values) => this.#request(text, values, true),
      list: (queue) => this.list(queue),
      sweepOrphans: (entries) => this.own.sweepOrphans(entries),
    });
    // Renewed on the heartbeat's own connection: renewals never wait behind the requests.
    const lease = { title: 'MySQL', id: this.id, renew: () => this.#beat.changed(STATEMENTS.renew, [this.#session]) };
    this.keepAlive = new KeepAlive(this.core, lease, this.timeoutMs, () => this.own.settle());
  }

  /** A statement on the main connection, sent again while it fails only on the way. */
  #request<R extends Row>(
    text: string,
    values: readonly unknown[],
    call: boolean,
    onAttempt?: () => void,
  ): Promise<R[]> {
    return this.core.retry(
      fromPromise(async () => {
        onAttempt?.();
        if (text === STATEMENTS.confirm) this.counters.confirms += 1;
        else this.counters.statements += 1;
        return call ? this.#main.call<R>(text, values) : this.#main.rows<R>(text, values);
      }),
    );
  }

  async enqueue(queue: string, kind: string, at?: Entry, data?: string, _dialect?: string): Promise<Enqueued> {
    this.core.assertOpen();
    const at_ = at === undefined ? null : at.order.toString();
    type Enqueue = QueueRow & { created: number | string; armed: number | string };
    return this.own.enqueue<Enqueue>(
      queue,
      kind,
      async (key, attempted) => {
        const name = lockNameOf(this.#database, key);
        const values = [this.#session, key, name, this.#namespace, queue, kind, at_, data ?? ''];
        const rows = await this.#request<Enqueue>(STATEMENTS.enqueue, values, true, attempted);
        if (rows.length > 0 && Number(rows[0]!.created) === 0) this.counters.adopted += 1;
        this.counters.queueRowsRead += rows.length;
        return rows;
      },
      // `armed`: the enqueue's word that the main connection holds the entry's name.
      (key, rows) => this.#names.enqueued(key, rows.length > 0 && Number(rows[0]!.armed) === 1),
    );
  }

  /** The entries just ahead of `self` in one index probe (see list-before.ts). */
  listBefore(queue: string, self: Entry, limit?: number): Promise<Ahead> {
    return this.#ahead.read(queue, self, limit);
  }

  async #live(keys: readonly string[]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const rows = await this.#request<{ key: string }>(STATEMENTS.live, [keys], false);
    return new Set(rows.map((row) => row.key));
  }

  withdraw(entry: Entry): Promise<void> {
    const retire = this.own.takeRetired(entry.key) ? 1 : 0;
    const values = [entry.key, this.#session, lockNameOf(this.#database, entry.key), retire];
    // Not taken again by a reconnect meanwhile: the withdraw sent again after it would find the name
    // free and the arm after that would hold it for an entry that is gone.
    this.#names.withdrawn(entry.key);
    return this.core.withdraw({
      key: entry.key,
      attempt: () =>
        fromPromise(() => {
          this.counters.statements += 1;
          return this.#main.query(STATEMENTS.withdraw, values);
        }),
      done: () => {
        this.own.forget(entry.key);
      },
    });
  }

  async read(entry: Entry): Promise<string | null> {
    const token = SqlEntry.rowTokenOf(entry).toString();
    const rows = await this.#request<{ data: string }>(STATEMENTS.read, [entry.key, token], false);
    return rows[0]?.data ?? null;
  }

  async describe(queue: string): Promise<EntryInfo[]> {
    const rows = await this.#request<DescribedRow>(STATEMENTS.describe, [this.#namespace, queue], false);
    return describedOf(queue, rows, mysqlSessionIdOf);
  }

  /** An operator's force release of any session's entry (see revoke.ts). */
  revoke(entry: Entry): Promise<boolean> {
    return mysqlRevoke(
      (text, values) =>
        this.core.retry(
          fromPromise(() => {
            this.counters.statements += 1;
            return this.#main.changed(text, values);
          }),
        ),
      this.#namespace,
      entry,
    );
  }

  /** The main connection broke: made again with the project's backoff (its `up` takes the names again). */
  #reconnectMain(): void {
    if (this.#reconnecting) return;
    this.#reconnecting = true;
    void (async () => {
      for (let attempt = 0; this.core.isOpen && !this.#main.connected; attempt += 1) {
        await backoff(attempt);
        if (!this.core.isOpen || this.#main.connected) return;
        await this.#main.open().catch(() => undefined);
      }
    })().finally(() => (this.#reconnecting = false));
  }

  protected links(): readonly SessionLink[] {
    return [this.#main, this.#beat, this.#pool];
  }

  protected listRows(queue: string): Promise<QueueRow[]> {
    this.counters.wholeListings += 1;
    return this.#request<QueueRow>(STATEMENTS.list, [this.#namespace, queue], true);
  }

  protected async ownsRow(entry: Entry): Promise<boolean> {
    return (await this.#request(STATEMENTS.confirm, [entry.key, this.#session], false)).length > 0;
  }

  protected deleteSessionRow(): Promise<unknown> {
    return this.#main.query(STATEMENTS.close, [this.#session]);
  }

  #onEnd(reason: Error): void {
    this.keepAlive.stop();
    this.waits.failAll(reason);
    this.own.clear();
    this.#names.clear();
  }

  #guardedHost(): GuardedHost {
    return {
      session: this.#session,
      namespace: this.#namespace,
      call: <R extends Row>(text: string, values: readonly unknown[]) => this.#request<R>(text, values, true),
      select: <R extends Row>(text: string, values: readonly unknown[]) => this.#request<R>(text, values, false),
    };
  }

  guardedWrite(entry: Entry, op: GuardedOp): Promise<boolean> {
    return mysqlGuardedWrite(this.#guardedHost(), entry, op);
  }

  guardedRead(queue: string, name: string): Promise<string | null> {
    return mysqlGuardedRead(this.#guardedHost(), queue, name);
  }
}

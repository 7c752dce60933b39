import type { Notification } from 'pg';

import type {
  Abortable,
  Ahead,
  AheadAsked,
  Enqueued,
  EnqueuedAhead,
  Entry,
  GiveUp,
  GuardedClient,
  GuardedOp,
} from '../../../recipes/contract.js';
import type { Driver, EntryInfo } from '../../driver-port.js';
import { backstopEveryMs } from '../../timing.js';
import { DriverCore } from '../core.js';
import { countWatch } from '../probe.js';
import { fromPromise } from '../requests.js';
import { type SessionLink, SqlDriverBase } from '../sql/driver-base.js';
import { describedOf, type DescribedRow, type QueueRow, SqlEntry } from '../sql/entry.js';
import { KeepAlive } from '../sql/keepalive.js';
import { OwnEntries } from '../sql/own-entries.js';
import { Channels } from './channels.js';
import { BoundedEnqueue } from './enqueue-ahead.js';
import { postgresFailures } from './failures.js';
import { type GuardedHost, GuardedStatements, postgresGuardedTransaction, postgresGuardedWrite } from './guarded.js';
import { type Link } from './link.js';
import { ShortRead } from './list-before.js';
import { openSession, type PostgresDriverOptions } from './open.js';
import { type PostgresCounters, postgresCounters, type PostgresProbe } from './probe.js';
import { postgresRevoke } from './revoke.js';
import { sessionIdOf } from './session-id.js';
import { Statements } from './statements.js';
import { Watches } from './watches.js';

export type { PostgresDriverOptions } from './open.js';
export { sessionIdOf, sessionRowOf } from './session-id.js';

/**
 * The PostgreSQL backend on node-postgres: a session is a row of `<schema>.sessions` whose lease the
 * server's clock times, renewed by a heartbeat; an entry is a row of `<schema>.entries` owned by it.
 * Two connections per session: one for the requests, one that listens (LISTEN per watched entry) and
 * carries the heartbeat. This file holds the contract's requests (those both SQL backends make alike
 * are in sql/driver-base.ts); the rest is in the files beside it (watches and their backstop, the short
 * read, session ids) and in sql/ (keep-alive, own entries and the orphan sweep, entries).
 */
export class PostgresDriver extends SqlDriverBase implements Driver {
  readonly id: string;
  readonly timeoutMs: number;
  readonly openedAt: number;
  readonly #session: string;
  readonly #namespace: string;
  readonly #schema: string;
  readonly #sql: Statements;
  readonly #main: Link;
  readonly #listen: Link;
  protected readonly core: DriverCore;
  readonly #channels: Channels;
  protected readonly counters: PostgresCounters;
  protected readonly own: OwnEntries;
  protected readonly waits: Watches;
  protected readonly keepAlive: KeepAlive;
  readonly #shortRead: ShortRead;
  readonly #bounded: BoundedEnqueue;

  static async open(options: PostgresDriverOptions, probe?: PostgresProbe): Promise<PostgresDriver> {
    let driver: PostgresDriver | undefined;
    const opened = await openSession(options, {
      up: (again) => {
        if (again && driver !== undefined) driver.#relistened();
      },
      down: () => {
        if (driver !== undefined) driver.keepAlive.down();
      },
      notification: (message) => {
        if (driver !== undefined) driver.#notified(message);
      },
    });
    driver = new PostgresDriver(opened, options, probe);
    return driver;
  }

  private constructor(
    opened: Awaited<ReturnType<typeof openSession>>,
    options: PostgresDriverOptions,
    probe: PostgresProbe | undefined,
  ) {
    super();
    this.#session = opened.session;
    // Distinct from the tokens and counts beside it in `baton inspect`: `pg-<sessions.id>`.
    this.id = sessionIdOf(opened.session);
    this.timeoutMs = options.sessionTimeoutMs;
    this.openedAt = opened.openedAt;
    this.#main = opened.main;
    this.#listen = opened.listen;
    this.#namespace = options.namespace;
    this.#schema = options.schema;
    this.#sql = new Statements(options.schema);
    this.counters = probe?.counters ?? postgresCounters();
    this.core = new DriverCore(postgresFailures(this.id, this.#schema), {
      onEnd: (reason) => this.#onEnd(reason),
      onLost: () => this.dropLinks(),
    });
    const watches = probe?.watches;
    this.#channels = new Channels({
      // Once, in order on the one connection: see ChannelHost.send.
      send: (statement) => this.#listen.query(statement).then(() => undefined),
      ...(watches === undefined ? {} : { watched: (tag, delta) => countWatch(watches, tag, delta) }),
    });
    this.own = new OwnEntries({
      session: this.#session,
      counters: this.counters,
      isOpen: () => this.core.isOpen,
      driver: this,
    });
    this.waits = new Watches(
      {
        core: this.core,
        channels: this.#channels,
        sql: this.#sql,
        schema: this.#schema,
        namespace: this.#namespace,
        session: this.#session,
        request: (text, values) => this.#request(text, values),
        list: (queue) => this.list(queue),
      },
      backstopEveryMs(this.timeoutMs),
    );
    probe?.expose({
      backendPids: async () => {
        const pid = async (link: Link): Promise<number | undefined> =>
          link.connected
            ? Number((await link.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid)
            : undefined;
        return {
          main: await pid(this.#main).catch(() => undefined),
          listen: await pid(this.#listen).catch(() => undefined),
        };
      },
    });
    this.#shortRead = new ShortRead(
      {
        namespace: this.#namespace,
        counters: this.counters,
        available: opened.features.listBefore,
        request: (text, values) => this.#request(text, values),
        list: (queue) => this.list(queue),
        withoutOrphans: (entries) => this.own.sweepOrphans(entries),
      },
      this.#schema,
    );
    this.#bounded = new BoundedEnqueue(
      {
        session: this.#session,
        namespace: this.#namespace,
        counters: this.counters,
        available: opened.features.enqueueAhead,
        own: this.own,
        request: (text, values, onAttempt) => this.#request(text, values, onAttempt),
        enqueue: (queue, kind, data) => this.enqueue(queue, kind, undefined, data),
      },
      this.#schema,
    );
    // Renewed on the listening connection: a failed renewal makes it again soon (see KeepAlive.down).
    const renew = async (): Promise<number> =>
      (await this.#listen.query(this.#sql.renew, [this.#session])).rowCount ?? 0;
    this.keepAlive = new KeepAlive(this.core, { title: 'PostgreSQL', id: this.id, renew }, this.timeoutMs, () =>
      this.own.settle(),
    );
  }

  /** A request on the main connection, sent again while it fails only on the way. */
  #request<R extends Record<string, unknown>>(
    text: string,
    values: readonly unknown[],
    onAttempt?: () => void,
  ): Promise<R[]> {
    return this.core.retry(
      fromPromise(async () => {
        onAttempt?.();
        this.counters.statements += 1;
        return (await this.#main.query<R>(text, values)).rows;
      }),
    );
  }

  async enqueue(queue: string, kind: string, at?: Entry, data?: string, _dialect?: string): Promise<Enqueued> {
    this.core.assertOpen();
    const at_ = at === undefined ? null : at.order.toString();
    return this.own.enqueue(queue, kind, async (key, attempted) => {
      const values = [this.#session, key, this.#namespace, queue, kind, at_, data ?? ''];
      const rows = await this.#request<QueueRow & { created: boolean }>(this.#sql.enqueue, values, attempted);
      // Found rather than created: an earlier attempt, whose reply was lost, was applied.
      if (rows[0]?.created === false) this.counters.adopted += 1;
      this.counters.queueRowsRead += rows.length;
      return rows;
    });
  }

  /** An enqueue at the tail answered with the entries just ahead, not the whole queue (see enqueue-ahead.ts). */
  async enqueueAhead(
    queue: string,
    kind: string,
    asked: AheadAsked,
    data?: string,
    _dialect?: string,
    _giveUp?: GiveUp,
  ): Promise<EnqueuedAhead> {
    this.core.assertOpen();
    return this.#bounded.enqueue(queue, kind, asked, data);
  }

  /** The entries just ahead of `self` and whether it is there, by an index probe (see list-before.ts). */
  listBefore(queue: string, self: Entry, limit?: number): Promise<Ahead> {
    return this.#shortRead.before(queue, self, limit);
  }

  withdraw(entry: Entry): Promise<void> {
    const statement = this.own.takeRetired(entry.key) ? this.#sql.withdrawRetired : this.#sql.withdraw;
    return this.core.withdraw({
      key: entry.key,
      attempt: () =>
        fromPromise(() => {
          this.counters.statements += 1;
          return this.#main.query(statement, [entry.key, this.#session]);
        }),
      done: () => this.own.forget(entry.key),
    });
  }

  async read(entry: Entry): Promise<string | null> {
    const rows = await this.#request<{ data: string }>(this.#sql.read, [
      entry.key,
      SqlEntry.rowTokenOf(entry).toString(),
    ]);
    return rows[0]?.data ?? null;
  }

  async describe(queue: string): Promise<EntryInfo[]> {
    const rows = await this.#request<DescribedRow>(this.#sql.describe, [this.#namespace, queue]);
    return describedOf(queue, rows, sessionIdOf);
  }

  /** The listening connection is back: listen again (and check every wait), and renew on it at once. */
  #relistened(): void {
    if (!this.core.isOpen) return;
    this.waits.relistened();
    void this.keepAlive.renew().catch(() => undefined);
  }

  #notified(message: Notification): void {
    const before = this.#channels.notifications;
    this.#channels.notified(message.channel);
    this.counters.notifications += this.#channels.notifications - before;
  }

  protected links(): readonly SessionLink[] {
    return [this.#main, this.#listen];
  }

  protected listRows(queue: string): Promise<QueueRow[]> {
    return this.#request<QueueRow>(this.#sql.list, [this.#namespace, queue]);
  }

  protected async ownsRow(entry: Entry): Promise<boolean> {
    return (await this.#request(this.#sql.confirm, [entry.key, this.#session])).length > 0;
  }

  protected deleteSessionRow(): Promise<unknown> {
    return this.#main.query(this.#sql.close, [this.#session]);
  }

  #onEnd(reason: Error): void {
    this.keepAlive.stop();
    this.waits.failAll(reason);
    this.own.clear();
  }

  /** Made at the first guarded call (see guarded.ts). */
  #guardedSql: GuardedStatements | undefined;

  #guardedHost(): GuardedHost {
    this.#guardedSql ??= new GuardedStatements(this.#schema);
    return {
      sql: this.#guardedSql,
      session: this.#session,
      request: <R extends Record<string, unknown>>(text: string, values: readonly unknown[]) =>
        this.#request<R>(text, values),
    };
  }

  guardedWrite(entry: Entry, op: GuardedOp): Promise<boolean> {
    return postgresGuardedWrite(this.#guardedHost(), entry, op);
  }

  async guardedRead(queue: string, name: string): Promise<string | null> {
    const { sql, request } = this.#guardedHost();
    return (await request<{ value: string }>(sql.read, [this.#namespace, queue, name]))[0]?.value ?? null;
  }

  /** An operator's force release of any session's entry (see revoke.ts). */
  revoke(entry: Entry): Promise<boolean> {
    return postgresRevoke((text, values) => this.#request(text, values), this.#schema, this.#namespace, entry);
  }

  guardedTransaction<T>(
    entry: Entry,
    client: GuardedClient,
    work: (client: GuardedClient) => Promise<T>,
    options: { readonly limitMs: number | undefined; readonly signal: Abortable },
    what: string,
  ): Promise<T> {
    const { sql } = this.#guardedHost();
    const bounds = { limitMs: options.limitMs ?? this.timeoutMs, signal: options.signal };
    return postgresGuardedTransaction(sql, this.#session, entry, client, work, bounds, what);
  }
}

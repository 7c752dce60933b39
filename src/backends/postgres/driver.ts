import type { Notification } from 'pg';

import {
  type Abortable,
  type Enqueued,
  type Entry,
  type GuardedClient,
  type GuardedOp,
  untilAborted,
} from '../../../recipes/contract.js';
import { BackendError, ClosedError, SessionLostError } from '../../../recipes/errors.js';
import { backoff } from '../../backoff.js';
import type { Driver, DriverEvents, EntryInfo } from '../../driver-port.js';
import { DriverCore, withdrawRefused } from '../core.js';
import { type PostgresCounters, postgresCounters, type PostgresProbe } from '../probe.js';
import { fromPromise } from '../requests.js';
import { sameEntries } from '../waiters.js';
import { Channels, entryChannel, queueChannel } from './channels.js';
import { postgresFailures, retriable } from './failures.js';
import { type GuardedHost, GuardedStatements, postgresGuardedTransaction, postgresGuardedWrite } from './guarded.js';
import { type Link } from './link.js';
import { openSession, type PostgresDriverOptions } from './open.js';
import { Statements } from './statements.js';

export type { PostgresDriverOptions } from './open.js';

/** One row of a queue listing (`list` and `enqueue` in the schema). */
interface QueueRow extends Record<string, unknown> {
  token: string;
  key: string;
  queue_position: string;
  kind: string;
}

/**
 * The PostgreSQL backend on node-postgres: a session is a row of `<schema>.sessions` whose lease the
 * server's clock times, renewed by a heartbeat; an entry is a row of `<schema>.entries` owned by it.
 * Two connections per session: one for the requests, one that listens (LISTEN per watched entry) and
 * carries the heartbeat.
 */
export class PostgresDriver implements Driver {
  /** None: only baton writes baton's tables. */
  readonly dialects: readonly string[] = [];
  readonly id: string;
  readonly timeoutMs: number;
  readonly openedAt: number;
  readonly #session: string;
  readonly #namespace: string;
  readonly #schema: string;
  readonly #sql: Statements;
  readonly #main: Link;
  readonly #listen: Link;
  readonly #core: DriverCore;
  readonly #channels: Channels;
  readonly #counters: PostgresCounters;
  #entryCount = 0;
  /** Keys of this session's entries that it knows of: enqueued and not yet withdrawn, or on their way. */
  readonly #own = new Set<string>();
  readonly #enqueuing = new Set<string>();
  /** Queues where an enqueue of unknown fate may still be applied late, and until when they are looked at. */
  readonly #unsettled = new Map<string, number>();
  #heartbeat: NodeJS.Timeout | undefined;
  #backstop: NodeJS.Timeout | undefined;
  #suspended = false;
  /** A reconnection of the listening connection is under way (#reconnectSoon). */
  #reconnecting = false;
  /** Observed queues (waitChange): how many local waits each, and the listing the latest one compares with. */
  readonly #observed = new Map<string, number>();
  readonly #observedSeen = new Map<string, readonly Entry[]>();
  /** Keys whose enqueue was sent more than once: their withdraw retires them (see `retired` in the schema). */
  readonly #retried = new Set<string>();
  /** Entries waited on: channel -> token, for the backstop's and a reconnect's check. */
  readonly #watchedTokens = new Map<string, { token: bigint; queue: string }>();

  static async open(options: PostgresDriverOptions, probe?: PostgresProbe): Promise<PostgresDriver> {
    let driver: PostgresDriver | undefined;
    const opened = await openSession(options, {
      up: (again) => {
        if (again && driver !== undefined) driver.#relistened();
      },
      down: () => {
        if (driver !== undefined) driver.#listenDown();
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
    this.#counters = probe?.counters ?? postgresCounters();
    this.#core = new DriverCore(postgresFailures(this.id, this.#schema), {
      beforeSend: () => undefined,
      onEnd: (reason) => this.#onEnd(reason),
      onLost: () => {
        this.#main.destroy();
        this.#listen.destroy();
      },
    });
    const watches = probe?.watches;
    this.#channels = new Channels({
      // Once, in order on the one connection: see ChannelHost.send.
      send: (statement) => this.#listen.query(statement).then(() => undefined),
      ...(watches === undefined
        ? {}
        : {
            watched: (tag, delta) => {
              const count = (watches.get(tag) ?? 0) + delta;
              if (count > 0) watches.set(tag, count);
              else watches.delete(tag);
            },
          }),
    });
    const beat = Math.max(Math.floor(this.timeoutMs / 4), 50);
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
    this.#heartbeat = setInterval(() => {
      void this.#renew().catch(() => undefined);
      this.#settle();
    }, beat);
    this.#heartbeat.unref();
  }

  attach(events: DriverEvents): void {
    this.#core.attach(events);
  }

  /** A request on the main connection, sent again while it fails only on the way. */
  #request<R extends Record<string, unknown>>(
    text: string,
    values: readonly unknown[],
    onAttempt?: () => void,
  ): Promise<R[]> {
    return this.#core.retry(
      fromPromise(async () => {
        onAttempt?.();
        this.#counters.statements += 1;
        return (await this.#main.query<R>(text, values)).rows;
      }),
    );
  }

  #entries(queue: string, rows: readonly QueueRow[]): Entry[] {
    return rows.map(
      (row) => new PostgresEntry(queue, row.key, row.kind, BigInt(row.queue_position), BigInt(row.token)),
    );
  }

  /**
   * A listing's entries, without this session's orphans, which are deleted on the way: an entry of
   * ours that no handle or waiter stands for can only be an enqueue attempt applied after the session
   * had moved on (its connection dropped while the server still ran it, after a retry that was answered,
   * and after that entry's release). Left, it would hold up everyone queued behind it.
   */
  #ownListing(queue: string, rows: readonly QueueRow[]): Entry[] {
    const prefix = `s${this.#session}.`;
    const entries = this.#entries(queue, rows);
    const orphans = entries.filter(
      (e) => e.key.startsWith(prefix) && !this.#own.has(e.key) && !this.#enqueuing.has(e.key),
    );
    if (orphans.length === 0) return entries;
    for (const orphan of orphans) {
      this.#counters.orphansRemoved += 1;
      this.withdraw(orphan).catch(() => undefined);
    }
    return entries.filter((e) => !orphans.includes(e));
  }

  async enqueue(queue: string, kind: string, at?: Entry, data?: string, _dialect?: string): Promise<Enqueued> {
    this.#core.assertOpen();
    const key = `s${this.#session}.${++this.#entryCount}`;
    const values = [
      this.#session,
      key,
      this.#namespace,
      queue,
      kind,
      at === undefined ? null : at.order.toString(),
      data ?? '',
    ];
    let attempts = 0;
    this.#enqueuing.add(key);
    try {
      const rows = await this.#request<QueueRow & { created: boolean }>(this.#sql.enqueue, values, () => {
        // A second attempt: the first may still reach the server later (its connection was dropped while
        // it was on the way); the withdraw of this entry then retires its key, so that it makes no entry again.
        if (++attempts === 2) this.#retried.add(key);
      });
      // Found rather than created: an earlier attempt, whose reply was lost, was applied.
      if (rows[0]?.created === false) this.#counters.adopted += 1;
      const entry = this.#entries(queue, rows).find((e) => e.key === key);
      if (entry === undefined) throw new BackendError(`wrote ${key} but the queue read does not show it`);
      this.#own.add(key);
      if (attempts > 1) this.#unsettle(queue);
      return { entry, queue: this.#ownListing(queue, rows) };
    } catch (error) {
      this.#unsettle(queue); // an attempt may have been applied, or may still be
      // Failed after more than one attempt: an earlier one may still arrive; retire the key now.
      if (this.#retried.has(key) && this.#core.isOpen) {
        void this.withdraw({ queue, key, kind, order: 0n, fencingToken: 0n }).catch(() => undefined);
      }
      throw error;
    } finally {
      this.#enqueuing.delete(key);
    }
  }

  /** An enqueue of unknown fate: the heartbeat looks at the queue for a while, for a copy applied late. */
  #unsettle(queue: string): void {
    this.#unsettled.set(queue, performance.now() + this.timeoutMs * 2);
  }

  async list(queue: string): Promise<readonly Entry[]> {
    return this.#ownListing(queue, await this.#request<QueueRow>(this.#sql.list, [this.#namespace, queue]));
  }

  async waitGone(entry: Entry, signal: Abortable): Promise<void> {
    signal.throwIfAborted();
    const end = this.#core.endError();
    if (end !== undefined) throw end;
    const token = PostgresEntry.rowTokenOf(entry);
    const channel = entryChannel(this.#schema, token);
    this.#watchedTokens.set(channel, { token, queue: entry.queue });
    const { done, listening } = this.#channels.wait(channel, `${this.#namespace}/${entry.queue}#${entry.key}`, signal);
    const forget = (): void => {
      if (!this.#channelWaited(channel)) this.#watchedTokens.delete(channel);
    };
    done.then(forget, forget);
    this.#ensureBackstop();
    // Listening first, then looking: a delete after the look is notified, one before it is seen.
    void untilAborted(listening, signal)
      .then(() => this.#live([token]))
      .then((live) => {
        if (!live.has(token)) this.#channels.wake(channel);
      })
      .catch(() => undefined); // the session's end or the signal settles `done`
    return done;
  }

  #channelWaited(channel: string): boolean {
    for (const [waited] of this.#channels.entries()) if (waited === channel) return true;
    return false;
  }

  /** Which of these entries exist and belong to a live session (an expired session's entries count as gone). */
  async #live(tokens: readonly bigint[]): Promise<Set<bigint>> {
    const rows = await this.#request<{ token: string }>(this.#sql.live, [tokens.map(String)]);
    return new Set(rows.map((row) => BigInt(row.token)));
  }

  async waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    signal.throwIfAborted();
    const end = this.#core.endError();
    if (end !== undefined) throw end;
    const channel = queueChannel(this.#schema, this.#namespace, queue);
    const { done, listening } = this.#channels.wait(channel, `${this.#namespace}/${queue}`, signal);
    this.#observe(queue, 1);
    this.#observedSeen.set(queue, seen);
    const forget = (): void => this.#observe(queue, -1);
    done.then(forget, forget);
    this.#ensureBackstop();
    void untilAborted(listening, signal)
      .then(() => this.#request(this.#sql.observe, [this.#namespace, queue, this.#session]))
      .then(() => this.list(queue))
      .then((now) => {
        if (!sameEntries(now, seen)) this.#channels.wake(channel);
      })
      .catch(() => undefined);
    return done;
  }

  /** Counts the local waits on a queue's changes; the observer row goes when the last one does. */
  #observe(queue: string, delta: 1 | -1): void {
    const count = (this.#observed.get(queue) ?? 0) + delta;
    if (count > 0) {
      this.#observed.set(queue, count);
      return;
    }
    this.#observed.delete(queue);
    this.#observedSeen.delete(queue);
    if (this.#core.isOpen)
      this.#request(this.#sql.unobserve, [this.#namespace, queue, this.#session]).catch(() => undefined);
  }

  async withdraw(entry: Entry): Promise<void> {
    const statement = this.#retried.delete(entry.key) ? this.#sql.withdrawRetired : this.#sql.withdraw;
    for (let attempt = 0; this.#core.isOpen; attempt += 1) {
      try {
        await this.#core.send(
          fromPromise(() => {
            this.#counters.statements += 1;
            return this.#main.query(statement, [entry.key, this.#session]);
          }),
        );
        this.#own.delete(entry.key);
        return;
      } catch (error) {
        if (this.#core.ended) return; // the entries went with the session
        if (!retriable(error)) throw withdrawRefused(entry.key, this.#core.mapFailure(error));
        await backoff(attempt);
      }
    }
  }

  async read(entry: Entry): Promise<string | null> {
    const rows = await this.#request<{ data: string }>(this.#sql.read, [
      entry.key,
      PostgresEntry.rowTokenOf(entry).toString(),
    ]);
    return rows[0]?.data ?? null;
  }

  async describe(queue: string): Promise<EntryInfo[]> {
    interface Described extends QueueRow {
      session: string;
      data: string;
      created_ms: number;
      expires_in_ms: number;
    }
    const rows = await this.#request<Described>(this.#sql.describe, [this.#namespace, queue]);
    const entries = this.#entries(queue, rows);
    return rows.map((row, index) => ({
      entry: entries[index]!,
      owner: sessionIdOf(row.session),
      client: 'baton',
      data: row.data,
      createdAt: Math.round(row.created_ms),
      expiresInMs: Math.max(0, Math.round(row.expires_in_ms)),
    }));
  }

  async confirm(entry: Entry): Promise<boolean> {
    const rows = await this.#request<{ key: string }>(this.#sql.confirm, [entry.key, this.#session]);
    if (rows.length > 0) return true;
    await this.#renew(); // our entry is gone: if the session went with it, it is lost now
    return false;
  }

  /**
   * The heartbeat: renews the lease, unless it has run out (then the session is lost: an expired
   * lease is never renewed). Its answer is the session's acknowledgement, its failure a suspension.
   */
  async #renew(): Promise<void> {
    if (!this.#core.isOpen) return;
    const sentAt = performance.now();
    let renewed: boolean;
    try {
      renewed =
        (await this.#core.send(fromPromise(() => this.#listen.query(this.#sql.renew, [this.#session])))).rowCount === 1;
    } catch (error) {
      if (this.#core.isOpen && retriable(error)) this.#listenDown();
      throw error;
    }
    if (!renewed) {
      const reason = new SessionLostError(
        `PostgreSQL session ${this.id} expired or was removed (its lease was not renewed in time)`,
      );
      this.#core.lose(reason);
      throw reason;
    }
    if (this.#suspended) {
      this.#suspended = false;
      this.#core.events?.status('connected');
    }
    this.#core.events?.ack(sentAt);
  }

  /** Looks at the queues where an enqueue of unknown fate may still be applied (their listing sweeps our orphans). */
  #settle(): void {
    const now = performance.now();
    for (const [queue, until] of [...this.#unsettled]) {
      if (now > until) this.#unsettled.delete(queue);
      else this.list(queue).catch(() => undefined);
    }
  }

  #listenDown(): void {
    if (!this.#core.isOpen) return;
    if (!this.#suspended) {
      this.#suspended = true;
      this.#core.events?.status('suspended');
    }
    this.#reconnectSoon();
  }

  /**
   * The listening connection broke: make it again now (a renewal on it), not at the next heartbeat a
   * quarter lease later, tried again with a short growing pause until it is back or the session ends.
   */
  #reconnectSoon(): void {
    if (this.#reconnecting) return;
    this.#reconnecting = true;
    void (async () => {
      for (let attempt = 0; this.#core.isOpen && this.#suspended; attempt += 1) {
        await backoff(attempt);
        if (!this.#core.isOpen || !this.#suspended) return;
        await this.#renew().catch(() => undefined);
      }
    })().finally(() => (this.#reconnecting = false));
  }

  /** The listening connection is back: listen again, then wake every waiter whose entry went meanwhile. */
  #relistened(): void {
    if (!this.#core.isOpen) return;
    void this.#channels
      .relisten()
      .then(() => this.#check())
      .catch(() => undefined);
    void this.#renew().catch(() => undefined);
  }

  #notified(message: Notification): void {
    const before = this.#channels.notifications;
    this.#channels.notified(message.channel);
    this.#counters.notifications += this.#channels.notifications - before;
  }

  /**
   * The backstop for a lost notification and for the entries of a session that expired without
   * anyone deleting them: while anything is waited for, every quarter of the session timeout, the
   * watched entries are looked up (one statement for all) and the observed queues listed.
   */
  #ensureBackstop(): void {
    if (this.#backstop !== undefined || !this.#core.isOpen) return;
    let checking = false;
    this.#backstop = setInterval(
      () => {
        if (!this.#core.isOpen || this.#channels.size === 0) {
          clearInterval(this.#backstop);
          this.#backstop = undefined;
          return;
        }
        if (checking) return;
        checking = true;
        this.#check()
          .finally(() => (checking = false))
          .catch(() => undefined);
      },
      Math.max(Math.floor(this.timeoutMs / 4), 50),
    );
    this.#backstop.unref();
  }

  async #check(): Promise<void> {
    const watched = [...this.#watchedTokens];
    if (watched.length > 0) {
      const live = await this.#live(watched.map(([, { token }]) => token));
      for (const [channel, { token }] of watched) if (!live.has(token)) this.#channels.wake(channel);
    }
    // A queue-change wait is woken when the queue differs from what it last saw.
    for (const [queue, seen] of [...this.#observedSeen]) {
      if (!sameEntries(await this.list(queue), seen))
        this.#channels.wake(queueChannel(this.#schema, this.#namespace, queue));
    }
  }

  abandon(reason: Error): void {
    if (!this.#core.isOpen) return;
    this.#core.end('lost', reason);
    this.#main.destroy();
    this.#listen.destroy();
  }

  async close(): Promise<void> {
    if (this.#core.status === 'closed') return;
    const wasOpen = this.#core.isOpen;
    this.#core.end('closed', new ClosedError());
    try {
      // The session's row goes, and its entries with it (their waiters are notified).
      if (wasOpen) await this.#main.query(this.#sql.close, [this.#session]).catch(() => undefined);
    } finally {
      await Promise.all([this.#main.close(), this.#listen.close()]);
    }
  }

  #onEnd(reason: Error): void {
    clearInterval(this.#heartbeat);
    clearInterval(this.#backstop);
    this.#heartbeat = undefined;
    this.#backstop = undefined;
    this.#channels.failAll(reason);
    this.#watchedTokens.clear();
    this.#retried.clear();
    this.#observed.clear();
    this.#observedSeen.clear();
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

/** A session's id as users see it (`session.id`, `baton inspect`), from its row's id. */
export function sessionIdOf(row: string): string {
  return `pg-${row}`;
}

/** The row id of a session id (`pg-<n>`). */
export function sessionRowOf(id: string): string {
  return id.replace(/^pg-/, '');
}

/**
 * An entry as read from the database. Its order and fencing token are its position (its own token, or
 * that of the entry it took the place of); the row's own token, which names the channel its delete
 * notifies, is kept apart.
 */
export class PostgresEntry implements Entry {
  readonly queue: string;
  readonly key: string;
  readonly kind: string;
  readonly order: bigint;
  readonly fencingToken: bigint;
  readonly #token: bigint;

  constructor(queue: string, key: string, kind: string, position: bigint, token: bigint) {
    this.queue = queue;
    this.key = key;
    this.kind = kind;
    this.order = position;
    this.fencingToken = position;
    this.#token = token;
  }

  /** The row's own token (an entry not read here: its fencing token, which is its own unless placed). */
  static rowTokenOf(entry: Entry): bigint {
    return #token in entry ? entry.#token : entry.fencingToken;
  }
}

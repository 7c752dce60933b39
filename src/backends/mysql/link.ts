import type { Connection, ConnectionOptions } from 'mysql2';

import { type LinkEvents, SqlLink } from '../sql/link.js';
import { OWN_THREAD_STATEMENT } from './statements.js';

/** mysql2's `createConnection` (loaded only for mysql URLs). */
export type CreateConnection = (config: ConnectionOptions) => Connection;

/** How many former connections a link keeps in mind, for a link that breaks again and again. */
const MAX_FORMER = 16;

/**
 * A connection as the server knows it: its thread id, and the client address and port it came from
 * (`PROCESSLIST.HOST`). An id names a connection only within one run of the server; with the address it
 * cannot be mistaken for another client's connection that a restarted server gave the same id.
 */
export interface ServerThread {
  readonly id: number;
  readonly host: string;
}

export type { LinkEvents } from '../sql/link.js';

/** A row of a result set, as mysql2 gives it (numbers of BIGINT columns as strings). */
export type Row = Record<string, unknown>;

/**
 * One MySQL connection that is made again after it breaks (see `SqlLink`: statements one at a time,
 * each with a deadline). Every new connection first gets baton's session settings (`setup`), and the
 * link keeps the server's ids of its connections that broke on the client's side.
 */
export class Link extends SqlLink<Connection> {
  readonly #create: CreateConnection;
  readonly #config: ConnectionOptions;
  readonly #setup: string;
  /** Server ids of this link's connections that broke on the client's side (their threads may live on). */
  #former: ServerThread[] = [];
  /** The current connection as the server knows it, once read. */
  #thread: ServerThread | undefined;
  /** Statements under way, by connection: mysql2 never answers them once the connection is destroyed. */
  readonly #inFlight = new Map<Connection, Set<(cause: unknown) => void>>();

  constructor(
    create: CreateConnection,
    config: ConnectionOptions,
    attemptMs: number,
    setup: string,
    events: LinkEvents = {},
  ) {
    super('MySQL', attemptMs, events);
    this.#create = create;
    this.#config = config;
    this.#setup = setup;
  }

  /** The server's id of the connection now up (for `KILL QUERY`), if any. */
  get threadId(): number | undefined {
    return this.standing?.threadId ?? undefined;
  }

  /** This link's connections that broke on the client's side, oldest first: their threads may live on. */
  takeFormerThreads(): ServerThread[] {
    return this.#former.splice(0);
  }

  /** Runs one statement after those queued before it; `limitMs` replaces the deadline (a wait that blocks). */
  query(text: string, values?: readonly unknown[], limitMs = this.attemptMs): Promise<unknown> {
    return this.queued((connection) => this.#send(connection, text, values), limitMs);
  }

  /** Rows of a statement that returns one result set (a SELECT). */
  async rows<R extends Row>(text: string, values?: readonly unknown[], limitMs?: number): Promise<R[]> {
    return (await this.query(text, values, limitMs)) as R[];
  }

  /** The first result set of a `CALL` (a procedure's SELECT), or none. */
  async call<R extends Row>(text: string, values?: readonly unknown[]): Promise<R[]> {
    const result = await this.query(text, values);
    return Array.isArray(result) && Array.isArray(result[0]) ? (result[0] as R[]) : [];
  }

  /** Rows changed by a statement (an UPDATE, a DELETE). */
  async changed(text: string, values?: readonly unknown[]): Promise<number> {
    const result = (await this.query(text, values)) as { affectedRows?: number };
    return result.affectedRows ?? 0;
  }

  protected async connect(): Promise<Connection> {
    const connection = this.#create({ connectTimeout: this.attemptMs, ...this.#config });
    this.adopt(connection);
    connection.on('error', (error: unknown) => this.broken(connection, error));
    connection.on('end', () => this.broken(connection, new Error('the connection to MySQL ended')));
    const limitMs = this.#config.connectTimeout ?? this.attemptMs;
    const timer = setTimeout(
      () => this.broken(connection, new Error(`no MySQL connection within ${limitMs} ms`)),
      limitMs,
    );
    try {
      await this.#untilBroken(
        connection,
        new Promise<void>((resolve, reject) => connection.connect((error) => (error ? reject(error) : resolve()))),
      );
      await this.#send(connection, this.#setup, undefined);
      const [self] = (await this.#send(connection, OWN_THREAD_STATEMENT, undefined)) as {
        id: number | string;
        host: string;
      }[];
      this.#thread = self === undefined ? undefined : { id: Number(self.id), host: String(self.host) };
    } catch (error) {
      this.broken(connection, error);
      connection.destroy();
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return connection;
  }

  /** Sends one statement; it fails with the cause if its connection breaks or is dropped before the answer. */
  #send(connection: Connection, text: string, values: readonly unknown[] | undefined): Promise<unknown> {
    return this.#untilBroken(connection, send(connection, text, values)).catch((error: unknown) => {
      // A connection that ends (a reset) under a statement: mysql2 tells only that statement, and emits
      // no 'error' nor 'end', so the link learns of it here or would keep a closed connection for good.
      if (isFatal(error)) this.broken(connection, error);
      throw error;
    });
  }

  /** `work` on `connection`, failed with the cause if the connection breaks first (mysql2 would never settle it). */
  #untilBroken<T>(connection: Connection, work: Promise<T>): Promise<T> {
    let fails = this.#inFlight.get(connection);
    if (fails === undefined) this.#inFlight.set(connection, (fails = new Set()));
    const waiting = fails;
    let fail: (cause: unknown) => void = () => undefined;
    return Promise.race([work, new Promise<never>((_, reject) => waiting.add((fail = reject)))]).finally(() =>
      waiting.delete(fail),
    );
  }

  /** Fails the statements under way on `connection` (destroyed: mysql2 would leave them unanswered). */
  #failInFlight(connection: Connection, cause: unknown): void {
    const fails = this.#inFlight.get(connection);
    this.#inFlight.delete(connection);
    for (const fail of fails ?? []) fail(cause);
  }

  protected released(connection: Connection, cause: unknown): void {
    if (this.#thread !== undefined) {
      this.#former.push(this.#thread);
      if (this.#former.length > MAX_FORMER) this.#former.shift();
    }
    this.#thread = undefined;
    connection.destroy();
    this.#failInFlight(connection, brokenBy(cause));
  }

  protected goodbye(connection: Connection): Promise<void> {
    return new Promise<void>((resolve) => connection.end(() => resolve()));
  }

  protected discard(connection: Connection | undefined): void {
    connection?.destroy();
    for (const open of [...this.#inFlight.keys()]) this.#failInFlight(open, new LinkClosedError());
  }

  protected discardStray(connection: Connection): void {
    connection.destroy();
  }

  protected closedError(): Error {
    return new LinkClosedError();
  }

  protected brokenWhileMade(): Error {
    return new LinkBrokenError(new Error('the connection to MySQL broke while it was made'));
  }
}

/** mysql2 marks the errors after which a connection is unusable (its end, a protocol error) `fatal`. */
function isFatal(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { fatal?: unknown }).fatal === true;
}

function send(connection: Connection, text: string, values: readonly unknown[] | undefined): Promise<unknown> {
  return new Promise((resolve, reject) => {
    connection.query({ sql: text, values: values as unknown[] | undefined }, (error, result) =>
      error ? reject(error) : resolve(result),
    );
  });
}

/** A statement on a link that was closed. */
export class LinkClosedError extends Error {
  constructor() {
    super('the MySQL connection was closed');
    this.name = 'LinkClosedError';
  }
}

/** The error a statement cut off by its connection's end fails with: the server's own error as it is (its number classifies it). */
function brokenBy(cause: unknown): unknown {
  const { errno, sqlState } = (cause ?? {}) as { errno?: unknown; sqlState?: unknown };
  return typeof errno === 'number' && typeof sqlState === 'string' ? cause : new LinkBrokenError(cause);
}

/** A statement whose connection broke or was dropped before its answer (`cause` says how): worth sending again. */
export class LinkBrokenError extends Error {
  constructor(cause: unknown) {
    super(cause instanceof Error ? cause.message : String(cause), { cause });
    this.name = 'LinkBrokenError';
  }
}

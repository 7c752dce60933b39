import net from 'node:net';

import type { Client, ClientConfig, Notification, QueryResult } from 'pg';

/** node-postgres's `Client` class (loaded only for postgres URLs). */
export type ClientClass = new (config: ClientConfig) => Client;

/** What a link tells its owner. */
export interface LinkEvents {
  /** A new connection is up (the first one too); `again` for every one after the first. */
  up?(again: boolean): void;
  /** The connection broke (or was dropped for not answering). */
  down?(cause: unknown): void;
  /** A NOTIFY for a channel this connection listens on. */
  notification?(message: Notification): void;
}

/**
 * One PostgreSQL connection that is made again after it breaks. Queries go one at a time, in order
 * (node-postgres's own queueing is deprecated), each with a deadline: a connection whose server
 * stopped answering (a cut without a reset) is dropped then, so that the query fails at once and can
 * be sent again on a new connection, instead of waiting for TCP to give up. The socket is made here
 * (node-postgres's `stream` option), so that it can be dropped.
 */
export class Link {
  readonly #Client: ClientClass;
  readonly #config: ClientConfig;
  readonly #events: LinkEvents;
  readonly #attemptMs: number;
  #client: Client | undefined;
  #socket: net.Socket | undefined;
  #connecting: Promise<Client> | undefined;
  #ups = 0;
  #closed = false;
  /** Queries wait their turn here: one in flight per connection. */
  #tail: Promise<unknown> = Promise.resolve();

  constructor(Client: ClientClass, config: ClientConfig, attemptMs: number, events: LinkEvents = {}) {
    this.#Client = Client;
    this.#config = config;
    this.#attemptMs = attemptMs;
    this.#events = events;
  }

  /** Whether the link was closed or destroyed for good. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Whether a connection stands now. */
  get connected(): boolean {
    return this.#client !== undefined && this.#connecting === undefined;
  }

  /** Connects now (the first connection: its failure is the caller's). */
  async open(): Promise<void> {
    await this.#connection();
  }

  /** Runs one statement, after those queued before it; rejects if the connection breaks or the deadline passes. */
  query<R extends Record<string, unknown> = Record<string, unknown>>(
    text: string,
    values?: readonly unknown[],
  ): Promise<QueryResult<R>> {
    const run = this.#tail.then(() => this.#run<R>(text, values));
    this.#tail = run.catch(() => undefined);
    return run;
  }

  async #run<R extends Record<string, unknown>>(
    text: string,
    values: readonly unknown[] | undefined,
  ): Promise<QueryResult<R>> {
    if (this.#closed) throw new LinkClosedError();
    const client = await this.#connection();
    const timer = setTimeout(
      () => this.drop(new Error(`no answer from PostgreSQL within ${this.#attemptMs} ms`)),
      this.#attemptMs,
    );
    try {
      return await client.query<R>(text, values as unknown[] | undefined);
    } finally {
      clearTimeout(timer);
    }
  }

  #connection(): Promise<Client> {
    if (this.#closed) return Promise.reject(new LinkClosedError());
    if (this.#client !== undefined && this.#connecting === undefined) return Promise.resolve(this.#client);
    this.#connecting ??= this.#connect().finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  async #connect(): Promise<Client> {
    const client = new this.#Client({
      ...this.#config,
      keepAlive: true,
      connectionTimeoutMillis: this.#config.connectionTimeoutMillis ?? this.#attemptMs,
      stream: () => {
        this.#socket = new net.Socket();
        return this.#socket;
      },
    });
    const socket = (): net.Socket | undefined => this.#socket;
    this.#client = client;
    client.on('error', (error) => this.#broken(client, error));
    client.on('end', () => this.#broken(client, new Error('the connection to PostgreSQL ended')));
    client.on('notification', (message) => this.#events.notification?.(message));
    const timer = setTimeout(() => socket()?.destroy(), this.#attemptMs);
    try {
      await client.connect();
    } catch (error) {
      this.#broken(client, error);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    if (this.#client !== client || this.#closed) {
      void client.end().catch(() => undefined);
      throw this.#closed ? new LinkClosedError() : new Error('the connection to PostgreSQL broke while it was made');
    }
    this.#events.up?.(this.#ups++ > 0);
    return client;
  }

  #broken(client: Client, cause: unknown): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    this.#socket?.destroy();
    this.#socket = undefined;
    if (!this.#closed) this.#events.down?.(cause);
  }

  /** Drops the connection (it stopped answering): its queries fail, the next one connects again. */
  drop(cause: unknown): void {
    const client = this.#client;
    const socket = this.#socket;
    if (client === undefined) return;
    this.#broken(client, cause);
    socket?.destroy();
  }

  /** Ends the connection for good (its queries fail). */
  async close(): Promise<void> {
    if (this.#closed) return;
    const client = this.#client;
    this.#closed = true;
    this.#client = undefined;
    if (client === undefined) return;
    const socket = this.#socket;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      client.end().catch(() => undefined),
      new Promise((resolve) => (timer = setTimeout(resolve, this.#attemptMs))),
    ]);
    clearTimeout(timer);
    socket?.destroy();
  }

  /** Destroys the connection at once, without a goodbye to the server. */
  destroy(): void {
    this.#closed = true;
    const socket = this.#socket;
    this.#client = undefined;
    socket?.destroy();
  }
}

/** A query on a link that was closed. */
export class LinkClosedError extends Error {
  constructor() {
    super('the PostgreSQL connection was closed');
    this.name = 'LinkClosedError';
  }
}

import net from 'node:net';

import type { Client, ClientConfig, Notification, QueryResult } from 'pg';

import { type LinkEvents as SqlLinkEvents, SqlLink } from '../sql/link.js';

/** node-postgres's `Client` class (loaded only for postgres URLs). */
export type ClientClass = new (config: ClientConfig) => Client;

/** What a link tells its owner: a `SqlLink`'s events, and the notifications it receives. */
export interface LinkEvents extends SqlLinkEvents {
  /** A NOTIFY for a channel this connection listens on. */
  notification?(message: Notification): void;
}

/**
 * One PostgreSQL connection that is made again after it breaks (see `SqlLink`: queries one at a time,
 * in order, each with a deadline; node-postgres's own queueing is deprecated). The socket is made
 * here (node-postgres's `stream` option), so that it can be dropped.
 */
export class Link extends SqlLink<Client> {
  readonly #Client: ClientClass;
  readonly #config: ClientConfig;
  readonly #notification: LinkEvents['notification'];
  #socket: net.Socket | undefined;

  constructor(Client: ClientClass, config: ClientConfig, attemptMs: number, events: LinkEvents = {}) {
    super('PostgreSQL', attemptMs, events);
    this.#Client = Client;
    this.#config = config;
    this.#notification = events.notification;
  }

  /** Runs one statement, after those queued before it; rejects if the connection breaks or the deadline passes. */
  query<R extends Record<string, unknown> = Record<string, unknown>>(
    text: string,
    values?: readonly unknown[],
  ): Promise<QueryResult<R>> {
    return this.queued((client) => client.query<R>(text, values as unknown[] | undefined));
  }

  protected async connect(): Promise<Client> {
    const client = new this.#Client({
      ...this.#config,
      keepAlive: true,
      connectionTimeoutMillis: this.#config.connectionTimeoutMillis ?? this.attemptMs,
      stream: () => {
        this.#socket = new net.Socket();
        return this.#socket;
      },
    });
    const socket = (): net.Socket | undefined => this.#socket;
    this.adopt(client);
    client.on('error', (error) => this.broken(client, error));
    client.on('end', () => this.broken(client, new Error('the connection to PostgreSQL ended')));
    client.on('notification', (message) => this.#notification?.(message));
    const timer = setTimeout(() => socket()?.destroy(), this.attemptMs);
    try {
      await client.connect();
    } catch (error) {
      this.broken(client, error);
      throw error;
    } finally {
      clearTimeout(timer);
    }
    return client;
  }

  protected released(): void {
    this.#socket?.destroy();
    this.#socket = undefined;
  }

  protected goodbye(client: Client): Promise<void> {
    return client.end().catch(() => undefined);
  }

  protected discard(): void {
    this.#socket?.destroy();
  }

  protected discardStray(client: Client): void {
    void client.end().catch(() => undefined);
  }

  protected closedError(): Error {
    return new LinkClosedError();
  }

  protected brokenWhileMade(): Error {
    return new Error('the connection to PostgreSQL broke while it was made');
  }
}

/** A query on a link that was closed. */
export class LinkClosedError extends Error {
  constructor() {
    super('the PostgreSQL connection was closed');
    this.name = 'LinkClosedError';
  }
}

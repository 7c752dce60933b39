import type { Redis } from 'ioredis';

/** What the link tells its owner. */
export interface SubscriberEvents {
  /** The connection of the moment is ready (each time it is). */
  ready(): void;
  /** A message on a subscribed channel. */
  message(channel: string): void;
  /** A new connection (a redial, or another node's) holds every channel again: messages may have been lost meanwhile. */
  resubscribed(): void;
}

/**
 * The session's subscriber connection and the channels it should hold. A reconnected connection
 * holds no channel: the link subscribes every wanted channel again itself (ioredis's own
 * resubscription leaves its command's failure unhandled when the connection closes again at once,
 * which ends the process). On a Redis Cluster a `PUBLISH` reaches every node, so any node serves;
 * when the node's connection gives up (see `replacement`), the link dials another one.
 */
export class SubscriberLink {
  #connection: Redis;
  readonly #replacement: (() => Redis) | undefined;
  readonly #events: SubscriberEvents;
  readonly #channels = new Set<string>();
  /** Subscriptions whose connection closed before the server answered: settled by the next resubscription. */
  readonly #pending: { resolve(): void; reject(error: Error): void }[] = [];
  #closed = false;

  /**
   * `first` is ready. `replacement` makes a connection to another node, for a cluster: the
   * connections must then give up redialling (a `retryStrategy` that returns null) so that they end
   * and are replaced.
   */
  constructor(first: Redis, events: SubscriberEvents, replacement?: () => Redis) {
    this.#events = events;
    this.#replacement = replacement;
    this.#connection = first;
    this.#attach(first);
  }

  get connection(): Redis {
    return this.#connection;
  }

  /** Subscribes `channel`; resolves once the server holds it (on the connection of the moment, or the next one). */
  async subscribe(channel: string): Promise<void> {
    this.#channels.add(channel);
    const connection = this.#connection;
    try {
      await connection.subscribe(channel);
    } catch (error) {
      // The connection closed before the server answered: the next one subscribes it on 'ready'.
      if (this.#closed || !this.#channels.has(channel) || (error instanceof Error && error.name === 'ReplyError'))
        throw error;
      await this.#nextResubscription();
    }
  }

  unsubscribe(channel: string): void {
    this.#channels.delete(channel);
    if (!this.#closed) this.#connection.unsubscribe(channel).catch(() => undefined);
  }

  /** Drops the connection so that it dials again (it stands but stays silent). */
  redial(): void {
    if (this.#connection.status === 'ready') this.#connection.disconnect(true);
  }

  /** Disconnects for good; subscriptions still waiting for a connection fail with `reason`. */
  close(reason: Error): void {
    this.#closed = true;
    this.#connection.disconnect();
    for (const pending of this.#pending.splice(0)) pending.reject(reason);
  }

  /** Every 'ready' of a connection (the first one's came before the link) is a connection holding no channel. */
  #attach(connection: Redis): void {
    connection.on('message', (channel: string) => {
      if (connection === this.#connection) this.#events.message(channel);
    });
    connection.on('ready', () => {
      if (connection !== this.#connection) return;
      this.#events.ready();
      void this.#resubscribe(connection);
    });
    connection.on('end', () => {
      if (this.#closed || connection !== this.#connection || this.#replacement === undefined) return;
      const next = this.#replacement();
      this.#connection = next;
      this.#attach(next);
      next.connect().catch(() => undefined);
    });
  }

  async #resubscribe(connection: Redis): Promise<void> {
    const channels = [...this.#channels];
    try {
      if (channels.length > 0) await connection.subscribe(...channels);
    } catch {
      return; // the connection closed again: its next 'ready', or its replacement's, subscribes again
    }
    if (connection !== this.#connection || this.#closed) return;
    for (const pending of this.#pending.splice(0)) pending.resolve();
    this.#events.resubscribed();
  }

  #nextResubscription(): Promise<void> {
    return new Promise((resolve, reject) => this.#pending.push({ resolve, reject }));
  }
}

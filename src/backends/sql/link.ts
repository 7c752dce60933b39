/** What a link tells its owner. */
export interface LinkEvents {
  /** A new connection is up (the first one too); `again` for every one after the first. */
  up?(again: boolean): void;
  /** The connection broke (or was dropped for not answering). */
  down?(cause: unknown): void;
}

/**
 * One SQL connection that is made again after it breaks. Statements go one at a time, in order, each
 * with a deadline after which the connection is dropped (a server that stopped answering, a cut
 * without a reset), so that the statement fails at once and can be sent again on a new connection,
 * instead of waiting for TCP to give up. What a connection `C` is, how it is made, sent on and ended,
 * is the backend's (the hooks below); this class keeps which connection is current and in what order
 * statements go.
 */
export abstract class SqlLink<C> {
  /** The backend's name in messages (`PostgreSQL`, `MySQL`). */
  readonly #title: string;
  protected readonly attemptMs: number;
  readonly #events: LinkEvents;
  #current: C | undefined;
  #connecting: Promise<C> | undefined;
  #ups = 0;
  #closed = false;
  /** Statements wait their turn here: one in flight per connection. */
  #tail: Promise<unknown> = Promise.resolve();

  constructor(title: string, attemptMs: number, events: LinkEvents) {
    this.#title = title;
    this.attemptMs = attemptMs;
    this.#events = events;
  }

  /** Whether the link was closed or destroyed for good. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Whether a connection stands now. */
  get connected(): boolean {
    return this.#current !== undefined && this.#connecting === undefined;
  }

  /** The connection that stands now, if any (one being made does not). */
  protected get standing(): C | undefined {
    return this.connected ? this.#current : undefined;
  }

  /** Connects now (the first connection: its failure is the caller's). */
  async open(): Promise<void> {
    await this.#connection();
  }

  /** Runs `work` on the connection after the statements queued before it, within `limitMs`. */
  protected queued<T>(work: (connection: C) => Promise<T>, limitMs = this.attemptMs): Promise<T> {
    const run = this.#tail.then(() => this.#run(work, limitMs));
    this.#tail = run.catch(() => undefined);
    return run;
  }

  async #run<T>(work: (connection: C) => Promise<T>, limitMs: number): Promise<T> {
    if (this.#closed) throw this.closedError();
    const connection = await this.#connection();
    const timer = setTimeout(() => this.drop(new Error(`no answer from ${this.#title} within ${limitMs} ms`)), limitMs);
    try {
      return await work(connection);
    } finally {
      clearTimeout(timer);
    }
  }

  #connection(): Promise<C> {
    if (this.#closed) return Promise.reject(this.closedError());
    if (this.#current !== undefined && this.#connecting === undefined) return Promise.resolve(this.#current);
    this.#connecting ??= this.#connect().finally(() => (this.#connecting = undefined));
    return this.#connecting;
  }

  async #connect(): Promise<C> {
    const connection = await this.connect();
    if (this.#current !== connection || this.#closed) {
      this.discardStray(connection);
      throw this.#closed ? this.closedError() : this.brokenWhileMade();
    }
    this.#events.up?.(this.#ups++ > 0);
    return connection;
  }

  /** Makes `connection` the current one: called by `connect` before it connects, so that a break meanwhile counts. */
  protected adopt(connection: C): void {
    this.#current = connection;
  }

  /** `connection` broke or was dropped: if it is the current one, it is let go and the owner told. */
  protected broken(connection: C, cause: unknown): void {
    if (this.#current !== connection) return;
    this.#current = undefined;
    this.released(connection, cause);
    if (!this.#closed) this.#events.down?.(cause);
  }

  /** Drops the connection (it stopped answering): its statements fail, the next one connects again. */
  drop(cause: unknown): void {
    const connection = this.#current;
    if (connection !== undefined) this.broken(connection, cause);
  }

  /** Ends the connection for good, with a goodbye to the server (bounded by the deadline). */
  async close(): Promise<void> {
    if (this.#closed) return;
    const connection = this.#current;
    this.#closed = true;
    this.#current = undefined;
    if (connection === undefined) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.goodbye(connection),
      new Promise((resolve) => (timer = setTimeout(resolve, this.attemptMs))),
    ]);
    clearTimeout(timer);
    this.discard(connection);
  }

  /** Destroys the connection at once, without a goodbye to the server. */
  destroy(): void {
    this.#closed = true;
    const connection = this.#current;
    this.#current = undefined;
    this.discard(connection);
  }

  /**
   * Makes a new connection and connects it: `adopt`s it first, and on a failure calls `broken` with
   * the failure before throwing it.
   */
  protected abstract connect(): Promise<C>;
  /** What a connection that broke leaves behind (its socket, its statements under way). */
  protected abstract released(connection: C, cause: unknown): void;
  /** The goodbye to the server at close: resolves when the server has it (or never). */
  protected abstract goodbye(connection: C): Promise<void>;
  /** Frees what is left once the link is closed or destroyed: its statements fail (as closed, or by the socket's end). */
  protected abstract discard(connection: C | undefined): void;
  /** A connection made after the link was closed or the connection let go: not to be used. */
  protected abstract discardStray(connection: C): void;
  /** The error of a statement on a closed link. */
  protected abstract closedError(): Error;
  /** The error of a connection that broke while it was made. */
  protected abstract brokenWhileMade(): Error;
}

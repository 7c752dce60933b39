import net from 'node:net';

type Mode = 'forward' | 'blackhole';

/** A TCP server on a free 127.0.0.1 port (not keeping the process alive), for the test proxies. */
export async function listenOnLoopback(
  onConnection: (client: net.Socket) => void,
): Promise<{ server: net.Server; port: number }> {
  const server = net.createServer(onConnection);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  server.unref();
  const address = server.address();
  return { server, port: typeof address === 'object' && address !== null ? address.port : 0 };
}

interface Pair {
  readonly client: net.Socket;
  readonly server: net.Socket;
  /** Replies from the server are discarded for this pair (its request went through, its reply must not). */
  mute: boolean;
  /** Bytes held back while partitioned, delivered on restore as TCP would after a healed partition. */
  held: { up: Buffer[]; down: Buffer[]; bytes: number };
  /** The first bytes the client sent: they say who it is (an etcd peer names itself in its requests). */
  first: Buffer | undefined;
  /** Cut off by `isolate()`: nothing passes either way; the connection stays open until `heal()`. */
  cut: boolean;
  /** Chosen by `holdRepliesAfterNextRequest()`: the server's bytes are held until `releaseReplies()`. */
  holding: boolean;
}

/** A partition longer than this much traffic ends the connection instead of holding more. */
const MAX_HELD_BYTES = 4 * 1024 * 1024;

/**
 * A TCP proxy on 127.0.0.1 between a client and one server, for fault injection: partitions
 * (blackhole), dropped connections, refused connections, and a cut right after one request.
 */
export class TcpProxy {
  readonly port: number;
  bytesUp = 0;
  bytesDown = 0;
  #mode: Mode = 'forward';
  #refusing = false;
  readonly #pairs = new Set<Pair>();
  readonly #server: net.Server;
  #cutAfter: { match: (chunk: Buffer) => boolean; done: () => void } | undefined;
  #holdAfter: { match: (chunk: Buffer) => boolean; done: () => void } | undefined;
  #replyDelayMs = 0;
  #isolate: ((first: Buffer) => boolean) | undefined;
  /** The next reply is cut short by its last byte and its connection hangs from there on. */
  #truncateNext = false;
  #rewriteFirst: ((chunk: Buffer) => Buffer) | undefined;
  /** Where new connections go, once `retarget()` moved them from the first target. */
  #target: { host?: string; port: number } | undefined;

  private constructor(server: net.Server, port: number) {
    this.#server = server;
    this.port = port;
  }

  /**
   * `rewriteFirst`, if given, makes each connection's first chunk from the client what it returns (a
   * handshake that names an address to dial back, say, pointed at another proxy).
   */
  static async start(
    target: { host?: string; port: number },
    rewriteFirst?: (chunk: Buffer) => Buffer,
  ): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const { server, port } = await listenOnLoopback((client) => proxy?.accept(client, target));
    proxy = new TcpProxy(server, port);
    proxy.#rewriteFirst = rewriteFirst;
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get connections(): number {
    return this.#pairs.size;
  }

  /**
   * A network partition: sockets stay open and nothing gets through in either direction. Bytes sent
   * meanwhile are held and delivered on `restore()`, as TCP retransmission would after the partition heals.
   */
  blackhole(): void {
    this.#mode = 'blackhole';
  }

  /**
   * A connection that dies in the middle of a reply: the next chunk the server sends arrives without its
   * last byte, and nothing more passes on that connection either way (it stays open, as a hung member's
   * would). New connections are forwarded as usual.
   */
  truncateNextReply(): void {
    this.#truncateNext = true;
  }

  /**
   * A partition of some clients only: connections whose first bytes match (now and from now on) pass
   * nothing either way, and stay open. The others are forwarded as before.
   */
  isolate(match: (first: Buffer) => boolean): void {
    this.#isolate = match;
    for (const pair of this.#pairs) if (pair.first !== undefined && match(pair.first)) pair.cut = true;
  }

  /**
   * A partition of one connection: the one whose server side has this local port (as the server's
   * `CLIENT LIST` shows its address) passes nothing either way from now on, and stays open until
   * `heal()`. New connections are forwarded as usual.
   */
  isolateServerPort(port: number): boolean {
    let found = false;
    for (const pair of this.#pairs) {
      if (pair.server.localPort === port) {
        pair.cut = true;
        found = true;
      }
    }
    return found;
  }

  /** Ends `isolate()`: its connections are closed (bytes were dropped, so they cannot carry on). */
  heal(): void {
    this.#isolate = undefined;
    for (const pair of [...this.#pairs]) if (pair.cut) this.#close(pair);
  }

  /** A slow server: everything it sends reaches the client `ms` later (0: at once again). */
  delayReplies(ms: number): void {
    this.#replyDelayMs = ms;
  }

  /** New connections go to another server from now on (a failover); open ones are closed. */
  retarget(target: { host?: string; port: number }): void {
    this.#target = target;
    this.drop();
  }

  /** Destroy every current connection; new ones are still accepted. */
  drop(): void {
    for (const pair of [...this.#pairs]) this.#close(pair);
  }

  /**
   * Every current connection reset (a TCP RST to the client, as from a server process that died with
   * bytes unread); new ones are still accepted.
   */
  reset(): void {
    for (const pair of [...this.#pairs]) {
      this.#pairs.delete(pair);
      pair.client.resetAndDestroy();
      pair.server.destroy();
    }
  }

  /** New connections are closed at once, as if the server were down; open ones carry on. */
  refuse(): void {
    this.#refusing = true;
  }

  /** Ends a partition and a refusal: held bytes are delivered, new connections accepted. */
  restore(): void {
    this.#mode = 'forward';
    this.#refusing = false;
    for (const pair of this.#pairs) {
      for (const chunk of pair.held.up.splice(0)) this.#up(pair, chunk, false);
      for (const chunk of pair.held.down.splice(0)) this.#down(pair, chunk, false);
      pair.held.bytes = 0;
    }
  }

  /**
   * Forwards the next client-to-server chunk that matches, then discards the server's replies on that
   * connection and destroys it once the chunk is written: the request reaches the server, its reply
   * never reaches the client.
   */
  dropAfterNextRequest(match: (chunk: Buffer) => boolean = () => true): Promise<void> {
    return new Promise((resolve) => {
      this.#cutAfter = { match, done: resolve };
    });
  }

  /**
   * A partition of one connection's replies: the next client-to-server chunk that matches goes
   * through, and from then on everything the server sends on that connection is held (its requests
   * still reach the server) until `releaseReplies()`. Other connections, new ones too, are forwarded
   * as usual. Resolves once the chunk is written to the server.
   */
  holdRepliesAfterNextRequest(match: (chunk: Buffer) => boolean): Promise<void> {
    return new Promise((resolve) => {
      this.#holdAfter = { match, done: resolve };
    });
  }

  /** Ends `holdRepliesAfterNextRequest()`: the held replies are delivered, in order, and the rest follow. */
  releaseReplies(): void {
    this.#holdAfter = undefined;
    for (const pair of this.#pairs) {
      if (!pair.holding) continue;
      pair.holding = false;
      const held = pair.held.down.splice(0);
      pair.held.bytes = pair.held.up.reduce((sum, chunk) => sum + chunk.length, 0);
      for (const chunk of held) this.#down(pair, chunk, false);
    }
  }

  async close(): Promise<void> {
    this.drop();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  private accept(client: net.Socket, target: { host?: string; port: number }): void {
    if (this.#refusing) {
      client.destroy();
      return;
    }
    const to = this.#target ?? target;
    const server = net.connect({ host: to.host ?? '127.0.0.1', port: to.port });
    const pair: Pair = {
      client,
      server,
      mute: false,
      held: { up: [], down: [], bytes: 0 },
      first: undefined,
      cut: false,
      holding: false,
    };
    this.#pairs.add(pair);
    client.on('data', (chunk: Buffer) => this.#up(pair, chunk, true));
    server.on('data', (chunk: Buffer) => this.#down(pair, chunk, true));
    // A muted pair's client side is cut on purpose; its server side closes a moment later on its own.
    client.on('error', () => pair.mute || this.#close(pair));
    client.on('close', () => pair.mute || this.#close(pair));
    server.on('error', () => this.#close(pair));
    server.on('close', () => this.#close(pair));
  }

  /** Holds a chunk during a partition; false if the chunk may go through now. */
  #hold(pair: Pair, chunk: Buffer, direction: 'up' | 'down'): boolean {
    if (this.#mode === 'forward' && !(direction === 'down' && pair.holding)) return false;
    pair.held[direction].push(chunk);
    pair.held.bytes += chunk.length;
    if (pair.held.bytes > MAX_HELD_BYTES) this.#close(pair);
    return true;
  }

  #down(pair: Pair, chunk: Buffer, fresh: boolean): void {
    if (fresh) this.bytesDown += chunk.length;
    if (pair.cut) return;
    if (pair.mute || this.#hold(pair, chunk, 'down')) return;
    if (this.#truncateNext) {
      this.#truncateNext = false;
      pair.client.write(chunk.subarray(0, chunk.length - 1));
      pair.mute = true;
      return;
    }
    if (this.#replyDelayMs > 0) {
      // Timers of equal delay fire in the order they were set: the bytes keep their order.
      setTimeout(() => pair.client.destroyed || pair.client.write(chunk), this.#replyDelayMs).unref();
      return;
    }
    pair.client.write(chunk);
  }

  #up(pair: Pair, chunk: Buffer, fresh: boolean): void {
    if (fresh) this.bytesUp += chunk.length;
    if (pair.first === undefined) {
      if (this.#rewriteFirst !== undefined) chunk = this.#rewriteFirst(chunk);
      pair.first = chunk;
      if (this.#isolate?.(chunk) === true) pair.cut = true;
    }
    if (pair.cut) return;
    if (pair.mute || this.#hold(pair, chunk, 'up')) return;
    const hold = this.#holdAfter;
    if (hold !== undefined && hold.match(chunk)) {
      this.#holdAfter = undefined;
      pair.holding = true;
      pair.server.write(chunk, () => hold.done());
      return;
    }
    const cut = this.#cutAfter;
    if (cut !== undefined && cut.match(chunk)) {
      this.#cutAfter = undefined;
      pair.mute = true;
      pair.server.write(chunk, () => {
        pair.client.destroy();
        // Let the server read the request before its side of the connection goes too.
        setTimeout(() => this.#close(pair), 200).unref();
        cut.done();
      });
      return;
    }
    pair.server.write(chunk);
  }

  #close(pair: Pair): void {
    if (!this.#pairs.delete(pair)) return;
    pair.client.destroy();
    pair.server.destroy();
  }
}

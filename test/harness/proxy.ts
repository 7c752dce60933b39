import net from 'node:net';

type Mode = 'forward' | 'blackhole' | 'refuse';

interface Pair {
  readonly client: net.Socket;
  readonly server: net.Socket;
  /** Replies from the server are discarded for this pair (its request went through, its reply must not). */
  mute: boolean;
}

/**
 * A TCP proxy on 127.0.0.1 between a client and one server, for fault injection: partitions
 * (blackhole), dropped connections, refused connections, and a cut right after one request.
 */
export class TcpProxy {
  readonly port: number;
  bytesUp = 0;
  bytesDown = 0;
  #mode: Mode = 'forward';
  readonly #pairs = new Set<Pair>();
  readonly #server: net.Server;
  #cutAfter: { match: (chunk: Buffer) => boolean; done: () => void } | undefined;

  private constructor(server: net.Server, port: number) {
    this.#server = server;
    this.port = port;
  }

  static async start(target: { host?: string; port: number }): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = net.createServer((client) => proxy?.accept(client, target));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    server.unref();
    const address = server.address();
    proxy = new TcpProxy(server, typeof address === 'object' && address !== null ? address.port : 0);
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  get connections(): number {
    return this.#pairs.size;
  }

  /** Keep sockets open but discard every byte in both directions: a network partition. */
  blackhole(): void {
    this.#mode = 'blackhole';
  }

  /** Destroy every current connection; new ones are still accepted. */
  drop(): void {
    for (const pair of [...this.#pairs]) this.#close(pair);
  }

  /** New connections are closed at once, as if the server were down. */
  refuse(): void {
    this.#mode = 'refuse';
  }

  restore(): void {
    this.#mode = 'forward';
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

  async close(): Promise<void> {
    this.drop();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  private accept(client: net.Socket, target: { host?: string; port: number }): void {
    if (this.#mode === 'refuse') {
      client.destroy();
      return;
    }
    const server = net.connect({ host: target.host ?? '127.0.0.1', port: target.port });
    const pair: Pair = { client, server, mute: false };
    this.#pairs.add(pair);
    client.on('data', (chunk: Buffer) => this.#up(pair, chunk));
    server.on('data', (chunk: Buffer) => {
      if (this.#mode !== 'forward' || pair.mute) return;
      this.bytesDown += chunk.length;
      client.write(chunk);
    });
    // A muted pair's client side is cut on purpose; its server side closes a moment later on its own.
    client.on('error', () => pair.mute || this.#close(pair));
    client.on('close', () => pair.mute || this.#close(pair));
    server.on('error', () => this.#close(pair));
    server.on('close', () => this.#close(pair));
  }

  #up(pair: Pair, chunk: Buffer): void {
    this.bytesUp += chunk.length;
    if (this.#mode !== 'forward' || pair.mute) return;
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

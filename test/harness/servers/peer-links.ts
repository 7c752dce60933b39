import { TcpProxy } from './proxy.js';
import type { PeerLink } from './zookeeper.js';

/**
 * Every link between the members of an ensemble, each through a proxy of its own, so that a test can
 * cut two members apart (both ways, quorum and election ports) while their clients still reach them.
 * Pass `route` as `startZooKeeper`'s `peerRoute`.
 *
 * ZooKeeper keeps one election connection per pair, the one the larger id dialled: a member that
 * receives a connection from a smaller id drops it and dials back at the election address the smaller
 * one announced in its first message (its own listening port). So the proxy from `a` to `b`'s election
 * port rewrites that announcement to the port of the proxy from `b` to `a`: the dial-back goes through
 * a proxy too, and a cut stops it.
 */
export class PeerLinks {
  /** By `${from}>${to}:${link}`. */
  readonly #proxies = new Map<string, TcpProxy>();

  readonly route = async (from: number, to: number, port: number, link: PeerLink): Promise<number> => {
    const rewrite = link === 'election' ? (chunk: Buffer) => this.#announceBack(chunk, from, to) : undefined;
    const proxy = await TcpProxy.start({ port }, rewrite);
    this.#proxies.set(`${from}>${to}:${link}`, proxy);
    return proxy.port;
  };

  /** The proxy member `from` dials to reach `to`'s `link` port. */
  proxy(from: number, to: number, link: PeerLink): TcpProxy {
    const proxy = this.#proxies.get(`${from}>${to}:${link}`);
    if (proxy === undefined) throw new Error(`no ${link} link from member ${from} to member ${to}`);
    return proxy;
  }

  /** Members `a` and `b` hear nothing more of each other, either way, on either port; open connections stay open. */
  cut(a: number, b: number): void {
    for (const proxy of this.#between(a, b)) proxy.blackhole();
  }

  /** Ends `cut(a, b)`: what was held back is delivered, as after a healed partition. */
  heal(a: number, b: number): void {
    for (const proxy of this.#between(a, b)) proxy.restore();
  }

  async close(): Promise<void> {
    await Promise.all([...this.#proxies.values()].map((proxy) => proxy.close()));
    this.#proxies.clear();
  }

  #between(a: number, b: number): TcpProxy[] {
    const keys = [`${a}>${b}:quorum`, `${b}>${a}:quorum`, `${a}>${b}:election`, `${b}>${a}:election`];
    return keys.flatMap((key) => this.#proxies.get(key) ?? []);
  }

  /**
   * The first message on an election connection: protocol version (8 bytes, negative), the sender's id
   * (8), the length of its address list (4), the list (`host:port|...`). The address becomes the
   * proxy by which `to` reaches `from`. Anything else (an old protocol, a short chunk) passes as it is.
   */
  #announceBack(chunk: Buffer, from: number, to: number): Buffer {
    const back = this.#proxies.get(`${to}>${from}:election`);
    if (back === undefined || chunk.length < 20 || chunk.readBigInt64BE(0) >= 0n) return chunk;
    const length = chunk.readInt32BE(16);
    if (length <= 0 || chunk.length < 20 + length) return chunk;
    const address = Buffer.from(`127.0.0.1:${back.port}`);
    const header = Buffer.alloc(20);
    chunk.copy(header, 0, 0, 16);
    header.writeInt32BE(address.length, 16);
    return Buffer.concat([header, address, chunk.subarray(20 + length)]);
  }
}

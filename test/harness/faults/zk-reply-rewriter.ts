import net from 'node:net';

import { listenOnLoopback } from '../servers/proxy.js';

/** ZooKeeper request types (jute OpCode) the tests pick requests by. */
export const ZkOp = { create: 1, delete: 2, exists: 3, getData: 4, getChildren2: 12, create2: 15 } as const;

interface Rule {
  readonly op: number;
  readonly path: string;
  readonly err: number;
  /** After the changed reply, nothing more passes on that connection either way (a server gone silent). */
  readonly thenSilence: boolean;
  /** The reply keeps its header only, without its payload (as from a server that does not know the request). */
  readonly bare: boolean;
  readonly matched: () => void;
}

/**
 * A TCP proxy in front of one real ZooKeeper server that can change the error code of one reply: the
 * server handles the request as usual, and the client reads `err` instead of the server's answer. It
 * is how a test makes a client meet an answer a real server gives only in a narrow race (a request
 * on a session being closed or just removed, on a session another connection has taken over).
 *
 * It reads the protocol's frames (a 4-byte length, then the frame): the first frame each way is the
 * connect request and its response; after that a request starts with its xid and type, a reply with
 * the xid, the zxid and the error code.
 */
export class ZkReplyRewriter {
  readonly port: number;
  readonly #server: net.Server;
  readonly #sockets = new Set<net.Socket>();
  #rule: Rule | undefined;

  private constructor(server: net.Server, port: number) {
    this.#server = server;
    this.port = port;
  }

  static async start(target: number): Promise<ZkReplyRewriter> {
    let proxy: ZkReplyRewriter | undefined;
    const { server, port } = await listenOnLoopback((client) => {
      if (proxy !== undefined) proxy.#accept(client, target);
    });
    proxy = new ZkReplyRewriter(server, port);
    return proxy;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Connections open through the proxy (each counted once). */
  get connections(): number {
    return this.#sockets.size / 2;
  }

  /**
   * The reply to the next request of type `op` on `path` (the server's path, chroot included; a path
   * ending with a slash: any path under it) carries error code `err`. Resolves when that reply has been passed on changed.
   */
  answerNext(
    op: number,
    path: string,
    err: number,
    options: { thenSilence?: boolean; bare?: boolean } = {},
  ): Promise<void> {
    return new Promise((resolve) => {
      this.#rule = {
        op,
        path,
        err,
        thenSilence: options.thenSilence ?? false,
        bare: options.bare ?? false,
        matched: resolve,
      };
    });
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  #accept(client: net.Socket, target: number): void {
    const server = net.connect({ host: '127.0.0.1', port: target });
    this.#sockets.add(client).add(server);
    /** The xid of the request whose reply is to be changed on this connection, and the rule it matched. */
    let pending: { xid: number; rule: Rule } | undefined;
    let silent = false;
    const up = frames((frame, index) => {
      const rule = this.#rule;
      if (
        index > 0 &&
        rule !== undefined &&
        pending === undefined &&
        frame.length >= 8 &&
        frame.readInt32BE(4) === rule.op &&
        matches(pathOf(frame), rule.path)
      ) {
        this.#rule = undefined;
        pending = { xid: frame.readInt32BE(0), rule };
      }
    });
    const down = frames((frame, index) => {
      if (index === 0 || pending === undefined || frame.length < 16 || frame.readInt32BE(0) !== pending.xid) return;
      frame.writeInt32BE(pending.rule.err, 12);
      const { rule } = pending;
      pending = undefined;
      setImmediate(rule.matched);
      if (rule.thenSilence) silent = true;
      return rule.bare ? frame.subarray(0, 16) : undefined;
    });
    client.on('data', (chunk: Buffer) => silent || server.write(up(chunk)));
    server.on('data', (chunk: Buffer) => {
      if (silent) return;
      const passing = down(chunk);
      if (passing.length > 0) client.write(passing);
    });
    const end = (): void => {
      client.destroy();
      server.destroy();
      this.#sockets.delete(client);
      this.#sockets.delete(server);
    };
    for (const socket of [client, server]) {
      socket.on('error', end);
      socket.on('close', end);
    }
  }
}

/**
 * Reassembles length-prefixed frames from a byte stream. `inspect` sees each whole frame (without its
 * length) and may change it in place, or return another frame to send instead; the returned function
 * gives back the bytes to forward, which are whole frames only (a partial frame waits for the rest).
 */
function frames(inspect: (frame: Buffer, index: number) => Buffer | void): (chunk: Buffer) => Buffer {
  let buffered = Buffer.alloc(0);
  let index = 0;
  return (chunk) => {
    buffered = Buffer.concat([buffered, chunk]);
    let at = 0;
    const out: Buffer[] = [];
    while (buffered.length - at >= 4) {
      const length = buffered.readInt32BE(at);
      if (buffered.length - at - 4 < length) break;
      const frame =
        inspect(buffered.subarray(at + 4, at + 4 + length), index) ?? buffered.subarray(at + 4, at + 4 + length);
      const prefix = Buffer.alloc(4);
      prefix.writeInt32BE(frame.length, 0);
      out.push(prefix, frame);
      index += 1;
      at += 4 + length;
    }
    buffered = buffered.subarray(at);
    return Buffer.concat(out);
  };
}

/** `path` is `wanted`, or under it when `wanted` ends with a slash (a queue's entries, whose names are not known ahead). */
function matches(path: string | undefined, wanted: string): boolean {
  return path === wanted || (wanted.endsWith('/') && path !== undefined && path.startsWith(wanted));
}

/** The path of a request whose body starts with one (every request the tests pick does). */
function pathOf(frame: Buffer): string | undefined {
  if (frame.length < 12) return undefined;
  const length = frame.readInt32BE(8);
  if (length < 0 || 12 + length > frame.length) return undefined;
  return frame.toString('utf8', 12, 12 + length);
}

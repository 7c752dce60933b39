import { mkdtempSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { redisServerBinary } from './install.js';
import { freePort } from './ports.js';
import { ServerProcess, sleep, startServer, stopMembers, tail } from './process.js';

const READY_TIMEOUT_MS = 20_000;

export interface RedisServerOptions {
  /** AOF with `appendfsync always` (every write on disk before it is answered); default: no persistence. */
  readonly persistence?: boolean;
  /** `host:port` of a primary to replicate (a replica). */
  readonly replicaOf?: string;
  /** More configuration, as `--name value` arguments (e.g. `['--requirepass', 'secret']`). */
  readonly args?: readonly string[];
}

/** One redis-server of ours: on a free 127.0.0.1 port, in a temp dir, stopped by PID. */
export class RedisServer extends ServerProcess {
  readonly dir: string;

  constructor(
    readonly port: number,
    private readonly options: RedisServerOptions,
  ) {
    super();
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'baton-redis-'));
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Starts the server (again, after a kill: with persistence it reads its AOF back). */
  async start(): Promise<void> {
    if (this.isAlive()) return;
    const binary = redisServerBinary();
    if (binary === undefined) throw new Error('redis-server is not installed (apt-get install -y redis-server)');
    const persistence = this.options.persistence === true;
    const args = [
      '--port', String(this.port),
      '--bind', '127.0.0.1',
      '--dir', this.dir,
      '--daemonize', 'no',
      '--save', '',
      '--appendonly', persistence ? 'yes' : 'no',
      ...(persistence ? ['--appendfsync', 'always'] : []),
      '--logfile', '',
      '--loglevel', 'warning',
      ...(this.options.replicaOf === undefined ? [] : ['--replicaof', ...this.options.replicaOf.split(':')]),
      ...(this.options.args ?? []),
    ];
    this.pid = startServer(binary, args, path.join(this.dir, 'server.log'));
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!this.isAlive()) throw new Error(`redis-server exited during start:\n${tail(path.join(this.dir, 'server.log'))}`);
      // With a password the server answers NOAUTH: it is up all the same.
      if (/^(\+PONG|-NOAUTH)/.test(await command(this.port, ['PING']).catch(() => ''))) return;
      await sleep(20);
    }
    throw new Error(`redis-server not ready after ${READY_TIMEOUT_MS} ms:\n${tail(path.join(this.dir, 'server.log'))}`);
  }

  async stop(): Promise<void> {
    await stopMembers([this]);
  }
}

/** Starts a redis-server on a free loopback port. */
export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  const server = new RedisServer(await freePort(), options);
  try {
    await server.start();
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}

/** One command in RESP over a fresh connection, for readiness checks; the first reply line. */
export function command(port: number, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let reply = '';
    socket.setTimeout(1_000, () => socket.destroy(new Error('timed out')));
    socket.on('connect', () => socket.write(`*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString();
      const end = reply.indexOf('\r\n');
      if (end >= 0) {
        socket.end();
        resolve(reply.slice(0, end));
      }
    });
    socket.on('error', reject);
  });
}

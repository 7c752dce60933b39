import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';

import { postgresBinDir } from './install.js';
import { freePort } from './ports.js';
import { makeTempDir, removeTempDir, ServerProcess, sleep, startServer, tail } from './process.js';

export interface PgServer {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust authentication on loopback). */
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  readonly pid: number | undefined;
  isAlive(): boolean;
  /** Stops the server: SIGINT (fast shutdown: every backend ends, nothing is left half-written) or SIGKILL (a crash). */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 30_000;

/** The one role that must give its password on the harness's server (the others are trusted on loopback). */
export const PASSWORD_ROLE = 'baton_password';

/**
 * The OS user the server runs as: PostgreSQL refuses to run as root, so as root the harness runs
 * `initdb` and `postgres` as Debian's `postgres` user (which the package creates); anyone else runs
 * them as themselves.
 */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string): number => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const uid = id('-u');
  const gid = id('-g');
  if (!Number.isInteger(uid) || uid <= 0)
    throw new Error(
      'PostgreSQL refuses to run as root and there is no "postgres" user (apt-get install -y postgresql creates it)',
    );
  return { uid, gid };
}

class Server extends ServerProcess implements PgServer {
  constructor(
    readonly port: number,
    readonly dir: string,
    private readonly user: { uid: number; gid: number } | undefined,
    private readonly durable: boolean,
    private readonly tls: boolean,
  ) {
    super();
  }

  get url(): string {
    return `postgres://postgres@127.0.0.1:${this.port}/postgres`;
  }

  async start(): Promise<void> {
    if (this.isAlive()) return;
    const args = [
      '-D',
      path.join(this.dir, 'data'),
      '-p',
      String(this.port),
      '-h',
      '127.0.0.1',
      '-k',
      this.dir, // the Unix socket in the temp dir, not /var/run/postgresql
      // Dynamic shared memory in the data dir, not /dev/shm: a server a test kills leaves its segments there.
      '-c',
      'dynamic_shared_memory_type=mmap',
      // The tests need no durability across an OS crash; a benchmark runs with PostgreSQL's defaults.
      ...(this.durable ? [] : ['-c', 'fsync=off', '-c', 'full_page_writes=off']),
      ...(this.tls
        ? [
            '-c',
            'ssl=on',
            '-c',
            `ssl_cert_file=${path.join(this.dir, 'server.pem')}`,
            '-c',
            `ssl_key_file=${path.join(this.dir, 'server.key')}`,
          ]
        : []),
      '-c',
      'max_connections=400',
      '-c',
      'shared_buffers=32MB',
      '-c',
      'log_min_messages=warning',
      '-c',
      'log_min_error_statement=panic',
    ];
    this.pid = startServer(path.join(postgresBinDir(), 'postgres'), args, path.join(this.dir, 'server.log'), this.user);
    await this.ready();
  }

  async ready(): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!this.isAlive()) throw new Error(`postgres exited during start:\n${tail(path.join(this.dir, 'server.log'))}`);
      if (await accepts(this.port)) return;
      await sleep(50);
    }
    throw new Error(`postgres not ready after ${READY_TIMEOUT_MS} ms:\n${tail(path.join(this.dir, 'server.log'))}`);
  }

  override async kill(signal: NodeJS.Signals = 'SIGINT'): Promise<void> {
    await super.kill(signal);
  }

  async stop(): Promise<void> {
    await this.kill('SIGINT');
    removeTempDir(this.dir);
  }
}

/**
 * Whether the server answers a startup packet: a message back (an authentication request or an error
 * such as "the database system is starting up", which is then retried) on a TCP connection.
 */
async function accepts(port: number): Promise<boolean> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({
    host: '127.0.0.1',
    port,
    user: 'postgres',
    database: 'postgres',
    connectionTimeoutMillis: 1_000,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Starts a PostgreSQL 15 on a free 127.0.0.1 port in a temp dir of its own: `initdb` (trust
 * authentication; fsync off unless `durable`; TLS with `tls`'s certificate and key), then `postgres` itself as a child whose PID the harness keeps, stopped by
 * that PID. As root both run as the `postgres` user, which owns the temp dir.
 */
export async function startPostgres(
  options: { durable?: boolean; tls?: { certFile: string; keyFile: string } } = {},
): Promise<PgServer> {
  const user = serverUser();
  const dir = makeTempDir('baton-pg-');
  if (user !== undefined) chownSync(dir, user.uid, user.gid);
  const init = spawnSync(
    path.join(postgresBinDir(), 'initdb'),
    ['-D', path.join(dir, 'data'), '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale', 'C'],
    {
      encoding: 'utf8',
      timeout: 120_000,
      ...(user ?? {}),
    },
  );
  if (init.status !== 0) {
    removeTempDir(dir);
    throw new Error(`initdb failed (status ${init.status}):\n${init.stderr}`);
  }
  // Trust on loopback, except for the role the tests log in with a password (PASSWORD_ROLE).
  const hba = path.join(dir, 'data', 'pg_hba.conf');
  writeFileSync(
    hba,
    `local all all trust\nhost all ${PASSWORD_ROLE} 127.0.0.1/32 scram-sha-256\nhost all all 127.0.0.1/32 trust\n`,
  );
  if (user !== undefined) chownSync(hba, user.uid, user.gid);
  if (options.tls !== undefined) {
    // The server reads its key only if the key is its own and nobody else may read it.
    for (const [from, to] of [
      [options.tls.certFile, 'server.pem'],
      [options.tls.keyFile, 'server.key'],
    ] as const) {
      copyFileSync(from, path.join(dir, to));
      chmodSync(path.join(dir, to), 0o600);
      if (user !== undefined) chownSync(path.join(dir, to), user.uid, user.gid);
    }
  }
  const server = new Server(await freePort(), dir, user, options.durable === true, options.tls !== undefined);
  try {
    await server.start();
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}

/** Whether something listens on the port (used by tests that wait for a restarted server). */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

import { spawnSync } from 'node:child_process';
import { chownSync } from 'node:fs';
import path from 'node:path';

import { mariadbBinaries } from './install.js';
import { freePort } from './ports.js';
import { makeTempDir, removeTempDir, ServerProcess, sleep, startServer, tail } from './process.js';

export interface MysqlServer {
  /** `mysql://baton:<password>@127.0.0.1:<port>/baton_test` (a user with a password, never `--skip-grant-tables`). */
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  readonly pid: number | undefined;
  isAlive(): boolean;
  /** Stops the server: SIGTERM (a clean shutdown) or SIGKILL (a crash). */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Starts it again on the same port and data directory. */
  start(): Promise<void>;
  /** Stops it and removes its directory. */
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 60_000;
/** The user and password the suites log in with (created by the harness; root logs in over the socket only). */
export const MYSQL_USER = 'baton';
export const MYSQL_PASSWORD = 'baton-test-password';
export const MYSQL_DATABASE = 'baton_test';

/** Small buffers and logs, no binary log, no doublewrite: the tests need no protection from torn pages. */
const SMALL = [
  '--innodb-log-file-size=8M',
  '--innodb-buffer-pool-size=32M',
  '--innodb-doublewrite=0',
  '--skip-log-bin',
  '--skip-name-resolve',
];

/**
 * No fsync, the log flushed once a second, not at each commit: a crash of the server (SIGKILL) may lose
 * the last second of commits. A server the tests crash (`durable`) runs as production should: its log
 * written and synced at every commit, so what it answered survives the crash. (MariaDB 10.11 with
 * `innodb_flush_method=nosync` and a log flushed at each commit stalled every commit after a crash
 * recovery, now and then: the flushed position of the log stopped moving.)
 */
function flushOptions(durable: boolean): string[] {
  return durable
    ? [...SMALL, '--innodb-flush-log-at-trx-commit=1']
    : [...SMALL, '--innodb-flush-method=nosync', '--innodb-flush-log-at-trx-commit=0'];
}

/** As root the server runs as Debian's `mysql` user (the package creates it), which then owns the dir. */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string): number => Number(spawnSync('id', [flag, 'mysql'], { encoding: 'utf8' }).stdout.trim());
  const uid = id('-u');
  const gid = id('-g');
  if (!Number.isInteger(uid) || uid <= 0)
    throw new Error('mariadbd should not run as root and there is no "mysql" user (apt-get install mariadb-server)');
  return { uid, gid };
}

class Server extends ServerProcess implements MysqlServer {
  constructor(
    readonly port: number,
    readonly dir: string,
    private readonly user: { uid: number; gid: number } | undefined,
    private readonly flush: readonly string[],
  ) {
    super();
  }

  get url(): string {
    return `mysql://${MYSQL_USER}:${MYSQL_PASSWORD}@127.0.0.1:${this.port}/${MYSQL_DATABASE}`;
  }

  get socket(): string {
    return path.join(this.dir, 'mysqld.sock');
  }

  async start(): Promise<void> {
    if (this.isAlive()) return;
    const args = [
      '--no-defaults',
      `--datadir=${path.join(this.dir, 'data')}`,
      `--socket=${this.socket}`,
      `--tmpdir=${this.dir}`,
      `--pid-file=${path.join(this.dir, 'mysqld.pid')}`,
      `--port=${this.port}`,
      '--bind-address=127.0.0.1',
      `--log-error=${path.join(this.dir, 'server.log')}`,
      '--max-connections=600',
      ...this.flush,
    ];
    this.pid = startServer(mariadbBinaries().server, args, path.join(this.dir, 'stdout.log'), this.user);
    await this.ready();
  }

  async ready(): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!this.isAlive()) throw new Error(`mariadbd exited during start:\n${tail(path.join(this.dir, 'server.log'))}`);
      if (this.rootSql('SELECT 1').status === 0) return;
      await sleep(100);
    }
    throw new Error(`mariadbd not ready after ${READY_TIMEOUT_MS} ms:\n${tail(path.join(this.dir, 'server.log'))}`);
  }

  /** Runs SQL as root over the server's Unix socket (unix_socket authentication of the OS user root, or none). */
  rootSql(sql: string): { status: number | null; stderr: string } {
    const run = spawnSync(mariadbBinaries().client, ['--no-defaults', '-S', this.socket, '-uroot', '-e', sql], {
      encoding: 'utf8',
      timeout: 10_000,
    });
    return { status: run.status, stderr: run.stderr };
  }

  override async kill(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    await super.kill(signal);
  }

  async stop(): Promise<void> {
    await this.kill('SIGTERM');
    removeTempDir(this.dir);
  }
}

/**
 * Starts a MariaDB on a free 127.0.0.1 port in a temp dir of its own: `mariadb-install-db` (no test
 * database), then `mariadbd --no-defaults` as a child whose PID the harness keeps, stopped by that PID.
 * A user with a password is created for the suites (grants are checked as in production). A test that
 * crashes the server asks for `durable` (every commit's log written before it is answered); `serverArgs`
 * are added to the server's options (not to the install's).
 */
export async function startMysql(
  options: { durable?: boolean; serverArgs?: readonly string[] } = {},
): Promise<MysqlServer> {
  const flush = flushOptions(options.durable ?? false);
  const user = serverUser();
  const dir = makeTempDir('baton-mysql-');
  if (user !== undefined) chownSync(dir, user.uid, user.gid);
  const init = spawnSync(
    mariadbBinaries().installDb,
    [
      '--no-defaults',
      `--datadir=${path.join(dir, 'data')}`,
      // Its own temp dir: servers set up at once in the shared /tmp collided on their temporary tables.
      `--tmpdir=${dir}`,
      ...(user === undefined ? [] : ['--user=mysql']),
      '--auth-root-authentication-method=socket',
      '--skip-test-db',
      ...flush,
    ],
    { encoding: 'utf8', timeout: 180_000 },
  );
  if (init.status !== 0) {
    removeTempDir(dir);
    throw new Error(`mariadb-install-db failed (status ${init.status}):\n${init.stderr}`);
  }
  // The server's own options last: they override the harness's (`--log-bin` after `--skip-log-bin`).
  const server = new Server(await freePort(), dir, user, [...flush, ...(options.serverArgs ?? [])]);
  try {
    await server.start();
    const made = server.rootSql(
      `CREATE DATABASE ${MYSQL_DATABASE}; CREATE USER '${MYSQL_USER}'@'127.0.0.1' IDENTIFIED BY '${MYSQL_PASSWORD}';` +
        ` GRANT ALL ON *.* TO '${MYSQL_USER}'@'127.0.0.1';`,
    );
    if (made.status !== 0) throw new Error(`could not create the test user: ${made.stderr}`);
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}

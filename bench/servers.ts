import { startEtcd } from '../test/harness/servers/etcd.js';
import { ensureServersInstalled } from '../test/harness/servers/install.js';
import { startMysql } from '../test/harness/servers/mysql.js';
import { startPostgres } from '../test/harness/servers/postgres.js';
import { startRedis } from '../test/harness/servers/redis.js';
import { startZooKeeper } from '../test/harness/servers/zookeeper.js';

/**
 * The servers of one run, each started by the test harness on first use (standalone ZooKeeper with
 * forceSync on, standalone etcd, PostgreSQL with fsync on) unless BATON_BENCH_ZK=host:port,
 * BATON_BENCH_ETCD=http://host:port, BATON_BENCH_POSTGRES=postgres://... or BATON_BENCH_MYSQL=mysql://... name running ones. `stop()` stops only what was started here.
 */
export class Servers {
  #zk: Promise<string> | undefined;
  #etcd: Promise<string> | undefined;
  #postgres: Promise<string> | undefined;
  #redis: Promise<string> | undefined;
  #mysql: Promise<string> | undefined;
  readonly #stops: (() => Promise<void>)[] = [];
  /** PIDs of the servers started here, for their CPU time (none for external servers). */
  readonly pids: {
    zk?: number | undefined;
    etcd?: number | undefined;
    postgres?: number | undefined;
    redis?: number | undefined;
    mysql?: number | undefined;
  } = {};

  zk(): Promise<string> {
    this.#zk ??= this.#startZk();
    return this.#zk;
  }

  etcd(): Promise<string> {
    this.#etcd ??= this.#startEtcd();
    return this.#etcd;
  }

  postgres(): Promise<string> {
    this.#postgres ??= this.#startPostgres();
    return this.#postgres;
  }

  redis(): Promise<string> {
    this.#redis ??= this.#startRedis();
    return this.#redis;
  }

  mysql(): Promise<string> {
    this.#mysql ??= this.#startMysql();
    return this.#mysql;
  }

  async stop(): Promise<void> {
    for (const stop of this.#stops.splice(0)) await stop();
  }

  async #startZk(): Promise<string> {
    const external = process.env['BATON_BENCH_ZK'];
    if (external !== undefined) return external;
    await ensureServersInstalled();
    const server = await startZooKeeper({ size: 1, tickTimeMs: 2000, forceSync: true });
    this.#stops.push(() => server.stop());
    this.pids.zk = server.members[0]?.pid;
    return server.connectString;
  }

  async #startPostgres(): Promise<string> {
    const external = process.env['BATON_BENCH_POSTGRES'];
    if (external !== undefined) return external;
    await ensureServersInstalled();
    // With PostgreSQL's durability defaults (fsync on), as ZooKeeper runs with forceSync.
    const server = await startPostgres({ durable: true });
    this.#stops.push(() => server.stop());
    this.pids.postgres = server.pid;
    return server.url;
  }

  /** A single primary with appendfsync always: the configuration that keeps baton's promise (docs/redis.md). */
  async #startRedis(): Promise<string> {
    const external = process.env['BATON_BENCH_REDIS'];
    if (external !== undefined) return external;
    const server = await startRedis({ persistence: true });
    this.#stops.push(() => server.stop());
    this.pids.redis = server.pid;
    return `redis://${server.address}`;
  }

  /**
   * The test harness's MariaDB (its test settings: no binary log, `innodb_flush_method=nosync`), with
   * the redo log written at every commit and room for the scale case's sessions (each holds 2 to 6
   * connections): both dynamic settings, set as the harness's user, who has every privilege.
   */
  async #startMysql(): Promise<string> {
    const external = process.env['BATON_BENCH_MYSQL'];
    if (external !== undefined) return external;
    await ensureServersInstalled();
    const server = await startMysql();
    this.#stops.push(() => server.stop());
    this.pids.mysql = server.pid;
    const { default: mysql } = await import('mysql2/promise');
    const admin = await mysql.createConnection(server.url);
    try {
      await admin.query('SET GLOBAL innodb_flush_log_at_trx_commit = 1');
      await admin.query('SET GLOBAL max_connections = 8000');
    } finally {
      await admin.end();
    }
    return server.url;
  }

  async #startEtcd(): Promise<string> {
    const external = process.env['BATON_BENCH_ETCD'];
    if (external !== undefined) return external;
    await ensureServersInstalled();
    const server = await startEtcd({ size: 1 });
    this.#stops.push(() => server.stop());
    this.pids.etcd = server.members[0]?.pid;
    return server.endpoints[0]!;
  }
}

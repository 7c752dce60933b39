import { startEtcd } from '../test/harness/servers/etcd.js';
import { ensureServersInstalled } from '../test/harness/servers/install.js';
import { startPostgres } from '../test/harness/servers/postgres.js';
import { startRedis } from '../test/harness/servers/redis.js';
import { startZooKeeper } from '../test/harness/servers/zookeeper.js';

/**
 * The servers of one run, each started by the test harness on first use (standalone ZooKeeper with
 * forceSync on, standalone etcd, PostgreSQL with fsync on) unless BATON_BENCH_ZK=host:port,
 * BATON_BENCH_ETCD=http://host:port or BATON_BENCH_POSTGRES=postgres://... name running ones. `stop()` stops only what was started here.
 */
export class Servers {
  #zk: Promise<string> | undefined;
  #etcd: Promise<string> | undefined;
  #postgres: Promise<string> | undefined;
  #redis: Promise<string> | undefined;
  readonly #stops: (() => Promise<void>)[] = [];
  /** PIDs of the servers started here, for their CPU time (none for external servers). */
  readonly pids: {
    zk?: number | undefined;
    etcd?: number | undefined;
    postgres?: number | undefined;
    redis?: number | undefined;
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

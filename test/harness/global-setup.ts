import type { ProvidedContext } from 'vitest';
import type { TestProject } from 'vitest/node';

import type { EtcdInfo } from './backends/etcd.js';
import type { RedisClusterInfo, RedisStandaloneInfo } from './backends/redis.js';
import type { ZkInfo } from './backends/zookeeper.js';
import { COMPILED_ENV, compileForChildren } from './compiled.js';
import type { ContainerServers } from './servers/containers.js';
import { type EtcdCluster, startEtcd } from './servers/etcd.js';
import {
  chooseServerSource,
  ensureServersInstalled,
  mysqlInstalled,
  postgresInstalled,
  serverSituation,
} from './servers/install.js';
import { type MysqlServer, startMysql } from './servers/mysql.js';
import { removePortClaims } from './servers/ports.js';
import { type PgServer, startPostgres } from './servers/postgres.js';
import { removeTempDir, removeWithRun } from './servers/process.js';
import { type RedisCluster, type RedisServer, startRedis, startRedisCluster } from './servers/redis.js';
import { startZooKeeper, type ZkCluster } from './servers/zookeeper.js';

declare module 'vitest' {
  export interface ProvidedContext {
    zkStandalone: ZkInfo;
    zkEnsemble: ZkInfo;
    etcdStandalone: EtcdInfo;
    etcdCluster: EtcdInfo;
    /** A PostgreSQL 15 server's URL (a superuser's, trust authentication on loopback). */
    postgres: string;
    /** A MariaDB server's URL (or BATON_TEST_MYSQL's), a user with a password. */
    mysql: string;
    redisStandalone: RedisStandaloneInfo;
    /** A Redis Cluster of 3 masters (or BATON_TEST_REDIS_CLUSTER's): a seed URL and the nodes. */
    redisCluster: RedisClusterInfo;
  }
}

/** Redis sessions in the shared suites: expiry tests then take a couple of seconds. */
const REDIS_SESSION_TIMEOUT_MS = 2_000;

/** etcd's smallest useful lease: expiry tests then take seconds. */
const ETCD_TTL_SECONDS = 2;

const TICK_MS = 200;
/** ZooKeeper clamps session timeouts to 2-20 ticks; 10 ticks keeps expiry tests at a couple of seconds. */
const SESSION_TIMEOUT_MS = 10 * TICK_MS;

type Provide = Pick<TestProject, 'provide'>;

/** What the run's first project started: the values to provide, and the teardown once the last project ends. */
interface Run {
  readonly provided: Map<string, unknown>;
  readonly teardown: () => Promise<void>;
  projects: number;
}

const RUN = Symbol.for('baton.test.global-setup');

/**
 * Vitest runs a global setup for each project (vitest.config.ts has two): the first one starts the
 * run's servers (`startServers`), every one provides their addresses, and the last teardown stops them.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const shared = globalThis as { [RUN]?: Promise<Run> };
  shared[RUN] ??= (async () => {
    const provided = new Map<string, unknown>();
    const teardown = await startServers({ provide: (key, value) => void provided.set(key, value) });
    return { provided, teardown, projects: 0 };
  })();
  const run = await shared[RUN];
  removeWithRun(project.tmpDir);
  run.projects += 1;
  for (const [key, value] of run.provided) project.provide(key as keyof ProvidedContext, value as never);
  return async () => {
    run.projects -= 1;
    if (run.projects > 0) return;
    delete shared[RUN];
    await run.teardown();
  };
}

/**
 * Starts the servers the suites share, once per run, on free loopback ports: a standalone ZooKeeper,
 * a 3-node ensemble, a standalone etcd, a 3-node etcd cluster, a PostgreSQL, a MariaDB, a standalone
 * redis-server and a Redis Cluster of 3 masters. BATON_TEST_ZK=host:port[,...], BATON_TEST_ETCD=http://host:port[,...],
 * BATON_TEST_POSTGRES=postgres://user[:password]@host:port/database,
 * BATON_TEST_MYSQL=mysql://user:password@host:port/database, BATON_TEST_REDIS=redis://host:port and
 * BATON_TEST_REDIS_CLUSTER=redis://host:port (any node of the cluster)
 * point the suites at running servers instead (PostgreSQL 15 is otherwise run as the `postgres` user
 * when the tests run as root). Without local
 * servers (and unless they can be installed) one ZooKeeper and one etcd container stand in for all four
 * when a container engine answers (containers.ts; never the case in CI). Everything
 * started here is stopped by PID in the teardown (and on exit or Ctrl-C by the harness's registry).
 */
async function startServers(project: Provide): Promise<() => Promise<void>> {
  const started: Started[] = [];
  const externalRedis = process.env['BATON_TEST_REDIS'] || undefined;
  const externalRedisCluster = process.env['BATON_TEST_REDIS_CLUSTER'] || undefined;
  let externalZk = process.env['BATON_TEST_ZK'] || undefined;
  let externalEtcd = process.env['BATON_TEST_ETCD'] || undefined;
  const source = await chooseServerSource(
    serverSituation(async () => (await import('./servers/containers.js')).containerEngineAnswers()),
  );
  if (source === 'local' || source === 'install') await ensureServersInstalled();
  const externalPostgres = process.env['BATON_TEST_POSTGRES'] || undefined;
  const externalMysql = process.env['BATON_TEST_MYSQL'] || undefined;
  if (
    ((externalPostgres === undefined && !postgresInstalled()) || (externalMysql === undefined && !mysqlInstalled())) &&
    source !== 'local' &&
    source !== 'install'
  )
    await ensureServersInstalled();
  let containers: ContainerServers | undefined;
  if (source === 'containers') {
    process.stderr.write('baton tests: no local ZooKeeper or etcd; starting them in containers (testcontainers)\n');
    containers = await (await import('./servers/containers.js')).startContainers(TICK_MS);
    externalZk ??= containers.zkConnectString;
    externalEtcd ??= containers.etcdEndpoint;
  }
  // Child processes (contenders, `baton` commands) run a compiled copy, compiled while the servers start.
  const compiling = compileForChildren();
  compiling.catch(() => undefined);
  try {
    const [zkStandalone, zkEnsemble, etcdStandalone, etcdCluster, postgres, redisStandalone, redisCluster, mysql] =
      await Promise.all([
        externalZk ? undefined : track(started, startZooKeeper({ size: 1, tickTimeMs: TICK_MS })),
        externalZk ? undefined : track(started, startZooKeeper({ size: 3, tickTimeMs: TICK_MS })),
        externalEtcd ? undefined : track(started, startEtcd({ size: 1 })),
        externalEtcd ? undefined : track(started, startEtcd({ size: 3 })),
        externalPostgres ? undefined : track(started, startPostgres()),
        externalRedis ? undefined : track(started, startRedis()),
        externalRedisCluster ? undefined : track(started, startRedisCluster({ masters: 3 })),
        externalMysql ? undefined : track(started, startMysql()),
      ]);
    // A container runs with the harness's tickTime; a server of the user's may not.
    const externalSessionMs =
      containers !== undefined && externalZk === containers.zkConnectString ? SESSION_TIMEOUT_MS : 4_000;
    project.provide('zkStandalone', zkStandalone ? zkInfo(zkStandalone) : zkExternal(externalZk!, externalSessionMs));
    project.provide('zkEnsemble', zkEnsemble ? zkInfo(zkEnsemble) : zkExternal(externalZk!, externalSessionMs));
    project.provide('etcdStandalone', {
      endpoints: etcdStandalone?.endpoints ?? externalEtcd!.split(','),
      ttlSeconds: ETCD_TTL_SECONDS,
    });
    project.provide('postgres', postgres?.url ?? externalPostgres!);
    project.provide('mysql', mysql?.url ?? externalMysql!);
    project.provide('redisStandalone', {
      url: redisStandalone === undefined ? externalRedis!.replace(/\/+$/, '') : `redis://${redisStandalone.address}`,
      sessionTimeoutMs: REDIS_SESSION_TIMEOUT_MS,
    });
    project.provide(
      'redisCluster',
      redisCluster === undefined
        ? redisClusterExternal(externalRedisCluster!)
        : {
            url: redisCluster.url,
            nodes: redisCluster.addresses,
            cluster: true,
            sessionTimeoutMs: REDIS_SESSION_TIMEOUT_MS,
          },
    );
    project.provide('etcdCluster', {
      endpoints: etcdCluster?.endpoints ?? externalEtcd!.split(','),
      ttlSeconds: ETCD_TTL_SECONDS,
    });
    process.env[COMPILED_ENV] = await compiling;
  } catch (error) {
    await Promise.allSettled([...started.map((cluster) => cluster.stop()), containers?.stop()]);
    throw error;
  }
  return async () => {
    await Promise.allSettled([...started.map((cluster) => cluster.stop()), containers?.stop()]);
    removeTempDir(process.env[COMPILED_ENV]!);
    removePortClaims();
  };
}

type Started = ZkCluster | EtcdCluster | PgServer | RedisServer | RedisCluster | MysqlServer;

async function track<T extends Started>(started: Started[], starting: Promise<T>): Promise<T> {
  const cluster = await starting;
  started.push(cluster);
  return cluster;
}

function zkInfo(cluster: ZkCluster): ZkInfo {
  return {
    connectString: cluster.connectString,
    ports: cluster.members.map((member) => member.clientPort),
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
  };
}

function zkExternal(connectString: string, sessionTimeoutMs: number): ZkInfo {
  const ports = connectString.split(',').map((host) => Number(host.split(':').pop()));
  return { connectString, ports, sessionTimeoutMs };
}

/** A cluster of the user's, from the URL of one node: the clients find the other nodes from it. */
function redisClusterExternal(url: string): RedisClusterInfo {
  const seed = new URL(url);
  return {
    url: url.replace(/\/+$/, ''),
    nodes: [`${seed.hostname}:${seed.port || '6379'}`],
    cluster: true,
    sessionTimeoutMs: REDIS_SESSION_TIMEOUT_MS,
  };
}

import type { TestProject } from 'vitest/node';
import type { EtcdInfo } from '../support/etcd.js';
import type { ZkInfo } from '../support/zookeeper.js';
import { startEtcd, type EtcdCluster } from './etcd.js';
import { ensureServersInstalled } from './install.js';
import { removePortClaims } from './ports.js';
import { startZooKeeper, type ZkCluster } from './zookeeper.js';

declare module 'vitest' {
  export interface ProvidedContext {
    zkStandalone: ZkInfo;
    zkEnsemble: ZkInfo;
    etcdStandalone: EtcdInfo;
    etcdCluster: EtcdInfo;
  }
}

/** etcd's smallest useful lease: expiry tests then take seconds. */
const ETCD_TTL_SECONDS = 2;

const TICK_MS = 200;
/** ZooKeeper clamps session timeouts to 2-20 ticks; 10 ticks keeps expiry tests at a couple of seconds. */
const SESSION_TIMEOUT_MS = 10 * TICK_MS;

/**
 * Starts the servers the suites share, once per run, on free loopback ports: a standalone ZooKeeper,
 * a 3-node ensemble, a standalone etcd and a 3-node etcd cluster. BATON_TEST_ZK=host:port[,...] and
 * BATON_TEST_ETCD=http://host:port[,...] point the suites at running servers instead. Everything
 * started here is stopped by PID in the teardown (and on exit or Ctrl-C by the harness's registry).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started: (ZkCluster | EtcdCluster)[] = [];
  const externalZk = process.env['BATON_TEST_ZK'] || undefined;
  const externalEtcd = process.env['BATON_TEST_ETCD'] || undefined;
  if (externalZk === undefined || externalEtcd === undefined) await ensureServersInstalled();
  try {
    const [zkStandalone, zkEnsemble, etcdStandalone, etcdCluster] = await Promise.all([
      externalZk ? undefined : track(started, startZooKeeper({ size: 1, tickTimeMs: TICK_MS })),
      externalZk ? undefined : track(started, startZooKeeper({ size: 3, tickTimeMs: TICK_MS })),
      externalEtcd ? undefined : track(started, startEtcd({ size: 1 })),
      externalEtcd ? undefined : track(started, startEtcd({ size: 3 })),
    ]);
    project.provide('zkStandalone', zkStandalone ? zkInfo(zkStandalone) : zkExternal(externalZk!));
    project.provide('zkEnsemble', zkEnsemble ? zkInfo(zkEnsemble) : zkExternal(externalZk!));
    project.provide('etcdStandalone', { endpoints: etcdStandalone?.endpoints ?? externalEtcd!.split(','), ttlSeconds: ETCD_TTL_SECONDS });
    project.provide('etcdCluster', { endpoints: etcdCluster?.endpoints ?? externalEtcd!.split(','), ttlSeconds: ETCD_TTL_SECONDS });
  } catch (error) {
    await Promise.allSettled(started.map((cluster) => cluster.stop()));
    throw error;
  }
  return async () => {
    await Promise.allSettled(started.map((cluster) => cluster.stop()));
    removePortClaims();
  };
}

async function track<T extends ZkCluster | EtcdCluster>(started: (ZkCluster | EtcdCluster)[], starting: Promise<T>): Promise<T> {
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

function zkExternal(connectString: string): ZkInfo {
  const ports = connectString.split(',').map((host) => Number(host.split(':').pop()));
  return { connectString, ports, sessionTimeoutMs: 4_000 };
}

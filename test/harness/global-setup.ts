import type { TestProject } from 'vitest/node';
import type { ZkInfo } from '../support/zookeeper.js';
import { ensureServersInstalled } from './install.js';
import { startZooKeeper, type ZkCluster } from './zookeeper.js';

declare module 'vitest' {
  export interface ProvidedContext {
    zkStandalone: ZkInfo;
    zkEnsemble: ZkInfo;
  }
}

const TICK_MS = 200;
/** ZooKeeper clamps session timeouts to 2-20 ticks; 10 ticks keeps expiry tests at a couple of seconds. */
const SESSION_TIMEOUT_MS = 10 * TICK_MS;

/**
 * Starts the servers the suites share, once per run: a standalone ZooKeeper and a 3-node ensemble on
 * free loopback ports. BATON_TEST_ZK=host:port[,host:port] points every ZooKeeper suite at running
 * servers instead. Everything started here is stopped by PID in the teardown (and on exit or Ctrl-C
 * by the harness's process registry).
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started: ZkCluster[] = [];
  const external = process.env['BATON_TEST_ZK'];
  if (external !== undefined && external !== '') {
    const info = externalZk(external);
    project.provide('zkStandalone', info);
    project.provide('zkEnsemble', info);
  } else {
    await ensureServersInstalled();
    const [standalone, ensemble] = await Promise.all([
      startZooKeeper({ size: 1, tickTimeMs: TICK_MS }),
      startZooKeeper({ size: 3, tickTimeMs: TICK_MS }),
    ]);
    started.push(standalone, ensemble);
    project.provide('zkStandalone', info(standalone));
    project.provide('zkEnsemble', info(ensemble));
  }
  return async () => {
    await Promise.allSettled(started.map((cluster) => cluster.stop()));
  };
}

function info(cluster: ZkCluster): ZkInfo {
  return {
    connectString: cluster.connectString,
    ports: cluster.members.map((member) => member.clientPort),
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
  };
}

function externalZk(connectString: string): ZkInfo {
  const ports = connectString.split(',').map((host) => Number(host.split(':').pop()));
  return { connectString, ports, sessionTimeoutMs: 4_000 };
}

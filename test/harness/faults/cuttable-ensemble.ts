import { afterAll, beforeAll } from 'vitest';

import { type Scope, useScope } from '../backends/scope.js';
import { zkFixtureOf } from '../backends/zookeeper.js';
import { PeerLinks } from '../servers/peer-links.js';
import { startZooKeeper, type ZkCluster } from '../servers/zookeeper.js';

export interface CuttableEnsemble {
  /** The members' links to each other: `cut(a, b)` and `heal(a, b)` by member id. */
  readonly links: PeerLinks;
  /** The ensemble, once the file's `beforeAll` has started it. */
  cluster(): ZkCluster;
  /** A namespace per test on the ensemble, checked for leftovers after each. */
  readonly scope: Scope;
}

/**
 * A 3-node ZooKeeper ensemble of the test file's own whose members reach each other only through
 * proxies, so that a test can cut one member off from another while its clients still reach it.
 * Started before the file's tests and stopped after them.
 */
export function useCuttableEnsemble(settings: {
  tickTimeMs: number;
  syncLimit: number;
  sessionTimeoutMs: number;
}): CuttableEnsemble {
  let cluster: ZkCluster | undefined;
  const links = new PeerLinks();
  beforeAll(async () => {
    cluster = await startZooKeeper({
      size: 3,
      tickTimeMs: settings.tickTimeMs,
      syncLimit: settings.syncLimit,
      peerRoute: links.route,
    });
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
    await links.close();
  });
  const started = (): ZkCluster => {
    if (cluster === undefined) throw new Error('the ensemble is not started yet');
    return cluster;
  };
  const scope = useScope(() =>
    zkFixtureOf(
      {
        connectString: started().connectString,
        ports: started().members.map((m) => m.clientPort),
        sessionTimeoutMs: settings.sessionTimeoutMs,
      },
      'ZooKeeper (own ensemble)',
    ),
  );
  return { links, cluster: started, scope };
}

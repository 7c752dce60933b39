import zookeeper from 'node-zookeeper-client';
import { inject } from 'vitest';
import { ZkDriver, zkCounters } from '../../src/backends/zookeeper/driver.js';
import type { BatonSession } from '../../src/session.js';
import { zkTree, zkWatchesUnder, zkRemoveTree } from '../harness/clean.js';
import type { Fixture } from './fixture.js';

export interface ZkInfo {
  readonly connectString: string;
  readonly ports: number[];
  readonly sessionTimeoutMs: number;
}

/** The contract fixture for a ZooKeeper deployment the global setup started (or the user pointed at). */
export function zkFixture(which: 'zkStandalone' | 'zkEnsemble'): Fixture {
  const info = inject(which);
  return {
    name: which === 'zkStandalone' ? 'ZooKeeper (standalone)' : 'ZooKeeper (3-node ensemble)',
    url: (namespace) => `zk://${info.connectString}/${namespace}`,
    options: { sessionTimeoutMs: info.sessionTimeoutMs },
    entries: async (namespace) =>
      (await zkTree(info.connectString, `/${namespace}`)).filter((node) => node.ephemeralOwner !== 0n).map((node) => node.path),
    watched: (namespace) => zkWatchesUnder(info.ports, `/${namespace}`),
    notifications: () => zkCounters.notifications,
    expire: (session) => expireZkSession(info.connectString, session),
    cleanup: (namespace) => zkRemoveTree(info.connectString, `/${namespace}`),
    crossProcess: true,
    // The client notices the expiry when it reconnects, within a session timeout or two.
    lossDeadlineMs: info.sessionTimeoutMs * 3,
  };
}

/** Ends a session from the server side: a second connection with the same id and password closes it. */
export async function expireZkSession(connectString: string, session: BatonSession): Promise<void> {
  const driver = session.backend;
  if (!(driver instanceof ZkDriver)) throw new Error('not a ZooKeeper session');
  const client = zookeeper.createClient(connectString, { ...driver.sessionCredentials(), sessionTimeout: driver.sessionTimeoutMs });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('could not attach to the session to expire it')), 10_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve();
    });
    client.connect();
  });
  await new Promise<void>((resolve) => {
    client.once('disconnected', () => resolve());
    client.close();
  });
}

import zookeeper from 'node-zookeeper-client';
import { afterAll, beforeAll, inject } from 'vitest';
import { ZkDriver, zkCounters } from '../../src/backends/zookeeper/driver.js';
import type { BatonSession } from '../../src/session.js';
import { zkTree, zkWatchesUnder, zkRemoveTree } from '../harness/clean.js';
import { fourLetterWord, zkMode } from '../harness/four-letter.js';
import type { Fixture } from './fixture.js';

export interface ZkInfo {
  readonly connectString: string;
  readonly ports: number[];
  readonly sessionTimeoutMs: number;
}

/** The contract fixture for a ZooKeeper deployment the global setup started (or the user pointed at). */
export function zkFixture(which: 'zkStandalone' | 'zkEnsemble'): Fixture {
  return zkFixtureOf(inject(which), which === 'zkStandalone' ? 'ZooKeeper (standalone)' : 'ZooKeeper (3-node ensemble)');
}

/** The same fixture for any ZooKeeper deployment, e.g. one a fault test started for itself to kill. */
export function zkFixtureOf(info: ZkInfo, name: string): Fixture {
  return {
    name,
    url: (namespace) => `zk://${info.connectString}/${namespace}`,
    options: { sessionTimeoutMs: info.sessionTimeoutMs },
    entries: async (namespace) =>
      (await zkTree(info.connectString, `/${namespace}`)).filter((node) => node.ephemeralOwner !== 0n).map((node) => node.path),
    watched: (namespace) => zkWatchesUnder(info.ports, `/${namespace}`),
    notifications: () => zkCounters.notifications,
    expire: (session) => expireZkSession(info, session),
    removeEntry: (key) => zkRemoveTree(info.connectString, key),
    cleanup: (namespace) => zkRemoveTree(info.connectString, `/${namespace}`),
    liveSessions: async (ids) => {
      const live: string[] = [];
      for (const id of ids) if (await sessionAlive(info.ports, `0x${BigInt(`0x${id}`).toString(16)}`)) live.push(id);
      return live;
    },
    crossProcess: true,
    laggingReads: info.ports.length > 1,
    // The client notices the expiry when it reconnects, within a session timeout or two.
    lossDeadlineMs: info.sessionTimeoutMs * 3,
  };
}

/**
 * Ends a session from the server side: a second connection with the same id and password closes it.
 * The original client may win the session back by reconnecting in between, so the close is repeated
 * until the leader's session tracker no longer lists the session.
 */
export async function expireZkSession(info: ZkInfo, session: BatonSession): Promise<void> {
  const driver = session.backend;
  if (!(driver instanceof ZkDriver)) throw new Error('not a ZooKeeper session');
  const id = `0x${BigInt(`0x${driver.id}`).toString(16)}`;
  for (let attempt = 0; attempt < 10; attempt += 1) {
    await attachAndClose(info.connectString, driver);
    const gone = Date.now() + 300;
    while (Date.now() < gone) {
      if (!(await sessionAlive(info.ports, id))) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  throw new Error(`session ${id} survived 10 attempts to close it`);
}

async function attachAndClose(connectString: string, driver: ZkDriver): Promise<void> {
  const client = zookeeper.createClient(connectString, { ...driver.sessionCredentials(), sessionTimeout: driver.timeoutMs });
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('could not attach to the session to expire it')), 10_000);
      client.once('connected', () => {
        clearTimeout(timer);
        resolve();
      });
      client.connect();
    });
  } finally {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2_000);
      client.once('disconnected', () => {
        clearTimeout(timer);
        resolve();
      });
      client.close();
    });
  }
}

/** Whether the leader's (or standalone server's) session tracker still lists the session. */
async function sessionAlive(ports: readonly number[], id: string): Promise<boolean> {
  for (const port of ports) {
    const mode = await zkMode(port);
    if (mode !== 'leader' && mode !== 'standalone') continue;
    const dump = await fourLetterWord(port, 'dump');
    const tracker = dump.slice(0, dump.indexOf('ephemeral nodes dump'));
    return tracker.split('\n').some((line) => line.trim() === id);
  }
  return true;
}

/** A plain client for a test file's own checks and faults, open from beforeAll to afterAll. */
export function useZkAdmin(connectString: () => string): () => zookeeper.Client {
  let admin: zookeeper.Client | undefined;
  beforeAll(async () => {
    const client = zookeeper.createClient(connectString(), { sessionTimeout: 4_000 });
    await new Promise<void>((resolve) => {
      client.once('connected', () => resolve());
      client.connect();
    });
    admin = client;
  });
  afterAll(() => admin?.close());
  return () => {
    if (admin === undefined) throw new Error('the admin client is open only inside the tests');
    return admin;
  };
}

import { etcdCounters, etcdWatches } from 'baton-locks/testing';
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, inject } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { EtcdDriver } from '../../../src/backends/etcd/driver.js';
import { backendOf } from '../internals.js';
import { type EtcdCluster, startEtcd } from '../servers/etcd.js';
import type { Fixture } from './fixture.js';
import { type Scope, useScope } from './scope.js';

export interface EtcdInfo {
  readonly endpoints: string[];
  readonly ttlSeconds: number;
}

/** A short-lived admin client for the checks and faults the tests need. */
async function withAdmin<T>(info: EtcdInfo, use: (client: Etcd3) => Promise<T>): Promise<T> {
  const client = new Etcd3({ hosts: info.endpoints });
  try {
    return await use(client);
  } finally {
    client.close();
  }
}

export function etcdFixture(which: 'etcdStandalone' | 'etcdCluster'): Fixture {
  return etcdFixtureOf(inject(which), which === 'etcdStandalone' ? 'etcd (standalone)' : 'etcd (3-node cluster)');
}

/** The same fixture for any etcd deployment, e.g. one a fault test started for itself to kill. */
export function etcdFixtureOf(info: EtcdInfo, name: string): Fixture {
  const hosts = info.endpoints.map((url) => url.replace(/^https?:\/\//, '')).join(',');
  return {
    name,
    url: (namespace) => `etcd://${hosts}/${namespace}`,
    options: { ttlSeconds: info.ttlSeconds },
    entries: (namespace) => withAdmin(info, (client) => client.getAll().prefix(`${namespace}/`).keys()),
    watched: async (namespace) => [...etcdWatches.keys()].filter((key) => key.startsWith(`${namespace}/`)).sort(),
    notifications: () => etcdCounters.notifications,
    expire: (session) => revokeLease(info, session),
    removeEntry: (key) => withAdmin(info, async (client) => void (await client.delete().key(key))),
    cleanup: (namespace) => withAdmin(info, async (client) => void (await client.delete().prefix(`${namespace}/`))),
    liveSessions: (ids) =>
      withAdmin(info, async (client) => {
        const leases = new Set((await client.leaseClient.leaseLeases()).leases.map((lease) => BigInt(lease.ID)));
        return ids.filter((id) => leases.has(BigInt(`0x${id}`)));
      }),
    crossProcess: true,
    // The keepalive notices a revoked lease within a quarter of the TTL; a lost one by the deadline.
    lossDeadlineMs: info.ttlSeconds * 3_000,
  };
}

/** Ends a session from the server side, as an operator or another client revoking its lease would. */
export async function revokeLease(info: EtcdInfo, session: Session): Promise<void> {
  const backend = backendOf(session);
  if (!(backend instanceof EtcdDriver)) throw new Error('not an etcd session');
  const id = BigInt(`0x${backend.id}`).toString();
  await withAdmin(info, async (client) => void (await client.leaseClient.leaseRevoke({ ID: id })));
}

/** A client of the shared standalone etcd for a file's own reads and writes, closed after the file. */
export function useEtcdAdmin(): () => Etcd3 {
  let admin: Etcd3 | undefined;
  beforeAll(() => {
    admin = new Etcd3({ hosts: inject('etcdStandalone').endpoints });
  });
  afterAll(() => admin?.close());
  return () => {
    if (admin === undefined) throw new Error('the admin client exists only inside the tests');
    return admin;
  };
}

/**
 * An etcd of the test file's own, for tests that disturb the whole server (a compaction, an alarm),
 * with an admin client on it and a scope of sessions on it: started before the file's tests, stopped
 * after them.
 */
export function useOwnEtcd(ttlSeconds: number): { scope: Scope; admin: () => Etcd3 } {
  let etcd: EtcdCluster | undefined;
  let admin: Etcd3 | undefined;
  beforeAll(async () => {
    etcd = await startEtcd({ size: 1 });
    admin = new Etcd3({ hosts: etcd.endpoints });
  });
  afterAll(async () => {
    admin?.close();
    await etcd?.stop();
  });
  const scope = useScope(() => etcdFixtureOf({ endpoints: etcd!.endpoints, ttlSeconds }, 'etcd (own server)'));
  return {
    scope,
    admin: () => {
      if (admin === undefined) throw new Error('the own etcd runs only inside the tests');
      return admin;
    },
  };
}

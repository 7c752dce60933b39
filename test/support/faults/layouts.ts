import { afterAll, beforeAll, inject } from 'vitest';
import { connect, etcdCounters, redisCounters, zkCounters } from 'baton-locks/testing';
import type { ConnectOptions } from '../../../src/connect.js';
import type { Session } from '../../../recipes/contract.js';
import { TcpProxy } from '../../harness/proxy.js';
import { etcdFixture } from '../backends/etcd.js';
import { redisFixture } from '../backends/redis.js';
import { ContenderPool } from './contender-pool.js';
import type { Fixture } from '../backends/fixture.js';
import { zkFixture } from '../backends/zookeeper.js';

export type LayoutName = 'zkStandalone' | 'zkEnsemble' | 'etcdStandalone' | 'etcdCluster' | 'redisStandalone';

/**
 * One of the five deployments the global setup starts, as the fault tests need it: the contract
 * fixture, one member to put the fault proxy in front of, and what a fault test must recognise on the
 * wire. Every wait in a fault test is derived from `timeoutMs`.
 */
export interface Layout {
  readonly name: LayoutName;
  fixture(): Fixture;
  /** The client port of the member the fault proxy forwards to. */
  port(): number;
  /** A session URL through the proxy listening at `address`. */
  url(address: string, namespace: string): string;
  /** The ZooKeeper session timeout, the etcd lease TTL or the Redis session key's expiry, in milliseconds. */
  timeoutMs(): number;
  /** Whether a client-to-server chunk carries `session`'s enqueue request (ZooKeeper create, etcd Txn). */
  isEnqueue(chunk: Buffer, session: Session): boolean;
  /** Entries adopted after a lost enqueue reply, in this process so far. */
  adopted(): number;
}

function zkLayout(name: 'zkStandalone' | 'zkEnsemble'): Layout {
  return {
    name,
    fixture: () => zkFixture(name),
    port: () => inject(name).ports[0]!,
    url: (address, namespace) => `zk://${address}/${namespace}`,
    timeoutMs: () => inject(name).sessionTimeoutMs,
    // Only requests on an entry name its protected `_c_` prefix; heartbeats and listings name directories.
    // A create of an entry named as Curator names it (baton's default) or as kazoo does.
    isEnqueue: (chunk) => chunk.includes('_c_') || chunk.includes('__lock__'),
    adopted: () => zkCounters.adopted,
  };
}

function etcdLayout(name: 'etcdStandalone' | 'etcdCluster'): Layout {
  return {
    name,
    fixture: () => etcdFixture(name),
    port: () => Number(new URL(inject(name).endpoints[0]!).port),
    url: (address, namespace) => `etcd://${address}/${namespace}`,
    timeoutMs: () => inject(name).ttlSeconds * 1_000,
    // The first slot's key (`<lease>-0-lock`) appears in the enqueue Txn; queue reads name only the prefix.
    isEnqueue: (chunk, session) => chunk.includes(`${session.id}-0-lock`),
    adopted: () => etcdCounters.adopted,
  };
}

function redisLayout(): Layout {
  return {
    name: 'redisStandalone',
    fixture: redisFixture,
    port: () => Number(new URL(inject('redisStandalone').url).port),
    url: (address, namespace) => `redis://${address}?namespace=${namespace}`,
    timeoutMs: () => inject('redisStandalone').sessionTimeoutMs,
    // Only the enqueue script names a lock's counter key (`...}:c`); the session's id is in its entry id.
    isEnqueue: (chunk, session) => chunk.includes('}:c\r\n') && chunk.includes(session.id),
    adopted: () => redisCounters.adopted,
  };
}

export const layouts: readonly Layout[] = [zkLayout('zkStandalone'), zkLayout('zkEnsemble'), etcdLayout('etcdStandalone'), etcdLayout('etcdCluster'), redisLayout()];

export interface Proxied {
  readonly proxy: TcpProxy;
  readonly session: Session;
  /** Closes the session, then the proxy. */
  close(): Promise<void>;
}

/** A session of `layout` whose only way to the server is a fresh fault proxy. */
export async function throughProxy(layout: Layout, namespace: string, options: ConnectOptions = {}): Promise<Proxied> {
  const proxy = await TcpProxy.start({ port: layout.port() });
  try {
    const session = await connect(layout.url(proxy.address, namespace), { ...layout.fixture().options, ...options });
    return {
      proxy,
      session,
      async close() {
        await session.close();
        await proxy.close();
      },
    };
  } catch (error) {
    await proxy.close();
    throw error;
  }
}

/**
 * Contending processes for a test file, started once before its tests and ended after them: starting
 * a Node process with TypeScript costs about a second of CPU, too much to pay again for every layout.
 */
export function useContenderPool(workers: number): () => ContenderPool {
  let pool: ContenderPool | undefined;
  beforeAll(async () => {
    pool = await ContenderPool.start(workers, 600_000);
  }, 60_000);
  afterAll(async () => {
    await pool?.close();
  });
  return () => {
    if (pool === undefined) throw new Error('the contenders run only inside the tests');
    return pool;
  };
}

import { connect, etcdCounters, mysqlCounters, postgresCounters, redisCounters, zkCounters } from 'baton-locks/testing';
import { afterAll, beforeAll, inject } from 'vitest';

import type { Entry, Session } from '../../../recipes/contract.js';
import { mysqlSessionRowOf } from '../../../src/backends/mysql/driver.js';
import { lockNameOf } from '../../../src/backends/mysql/open.js';
import { SqlEntry } from '../../../src/backends/sql/entry.js';
import type { ConnectOptions } from '../../../src/connect.js';
import { etcdFixture } from '../backends/etcd.js';
import type { Fixture } from '../backends/fixture.js';
import { MYSQL_SESSION_MS, mysqlFixture, mysqlUrl } from '../backends/mysql.js';
import { POSTGRES_SESSION_MS, postgresFixture, withParams } from '../backends/postgres.js';
import { redisFixture } from '../backends/redis.js';
import { zkFixture } from '../backends/zookeeper.js';
import { TcpProxy } from '../servers/proxy.js';
import { ContenderPool } from './contender-pool.js';

export type LayoutName =
  'zkStandalone' | 'zkEnsemble' | 'etcdStandalone' | 'etcdCluster' | 'postgres' | 'redisStandalone' | 'mysql';

/**
 * One of the seven deployments the global setup starts, as the fault tests need it: the contract
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
  /** The ZooKeeper session timeout, the etcd lease TTL, the PostgreSQL or MySQL lease or the Redis session key's expiry, in milliseconds. */
  timeoutMs(): number;
  /** Whether a client-to-server chunk carries `session`'s enqueue request (ZooKeeper create, etcd Txn, PostgreSQL or MySQL enqueue statement). */
  isEnqueue(chunk: Buffer, session: Session): boolean;
  /** Entries adopted after a lost enqueue reply, in this process so far. */
  adopted(): number;
  /** What a waiter's watch request on `entry` carries (its key's last segment; on PostgreSQL the LISTEN's channel; on MySQL the GET_LOCK name). */
  watchMark(entry: Entry): string;
}

const lastSegment = (key: string): string => key.slice(key.lastIndexOf('/') + 1);

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
    watchMark: (entry) => lastSegment(entry.key),
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
    watchMark: (entry) => lastSegment(entry.key),
  };
}

/** The PostgreSQL server: the proxy forwards the session's two connections (requests and LISTEN/heartbeat). */
function postgresLayout(): Layout {
  const server = (): URL => new URL(inject('postgres'));
  return {
    name: 'postgres',
    fixture: () => postgresFixture(),
    port: () => Number(server().port || 5432),
    url: (address, namespace) => {
      const url = server();
      url.host = address;
      return withParams(url.toString(), { namespace });
    },
    timeoutMs: () => POSTGRES_SESSION_MS,
    // The enqueue function's name and the session's entry key prefix are in the statement's Parse and Bind.
    isEnqueue: (chunk, session) => chunk.includes('.enqueue') && chunk.includes(`s${session.id.replace(/^pg-/, '')}.`),
    adopted: () => postgresCounters.adopted,
    // LISTEN "<schema>.e<token>" on the session's listening connection.
    watchMark: (entry) => `.e${SqlEntry.rowTokenOf(entry)}"`,
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
    // SUBSCRIBE to the entry's channel, which is its key.
    watchMark: (entry) => lastSegment(entry.key),
  };
}

/**
 * The MariaDB server: the proxy forwards the session's connections (requests, heartbeat, waits).
 * mysql2 sends a statement's values in its text, so a chunk shows what it calls and with what.
 */
function mysqlLayout(): Layout {
  const server = (): URL => new URL(mysqlUrl());
  return {
    name: 'mysql',
    fixture: mysqlFixture,
    port: () => Number(server().port || 3306),
    url: (address, namespace) => {
      const url = server();
      url.host = address;
      url.searchParams.set('namespace', namespace);
      return url.toString();
    },
    timeoutMs: () => MYSQL_SESSION_MS,
    // CALL baton_enqueue('<session row>', 's<session row>.<n>', ...): the procedure and the session's key prefix.
    isEnqueue: (chunk, session) =>
      chunk.includes('baton_enqueue(') && chunk.includes(`'s${mysqlSessionRowOf(session.id)}.`),
    adopted: () => mysqlCounters.adopted,
    // A wait connection's GET_LOCK on the entry's hashed name.
    watchMark: (entry) => lockNameOf(server().pathname.slice(1), entry.key),
  };
}

export const layouts: readonly Layout[] = [
  zkLayout('zkStandalone'),
  zkLayout('zkEnsemble'),
  etcdLayout('etcdStandalone'),
  etcdLayout('etcdCluster'),
  postgresLayout(),
  redisLayout(),
  mysqlLayout(),
];

/** The layouts of one standalone server each (ZooKeeper, etcd, PostgreSQL, Redis, MariaDB). */
export function standaloneLayouts(): readonly Layout[] {
  return layouts.filter(
    (layout) =>
      layout.name === 'zkStandalone' ||
      layout.name === 'etcdStandalone' ||
      layout.name === 'postgres' ||
      layout.name === 'redisStandalone' ||
      layout.name === 'mysql',
  );
}

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

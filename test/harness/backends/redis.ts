import { redisCounters, redisWatches } from 'baton-locks/testing';
import { Cluster, type ClusterNode, Redis } from 'ioredis';
import { afterAll, beforeAll, inject } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { RedisDriver } from '../../../src/backends/redis/driver.js';
import { backendOf } from '../internals.js';
import { type RedisServer, type RedisServerOptions, startRedis } from '../servers/redis.js';
import type { Fixture } from './fixture.js';
import { type Scope, useScope } from './scope.js';

/** A standalone redis-server (or a primary). */
export interface RedisStandaloneInfo {
  /** `redis://host:port` (no namespace). */
  readonly url: string;
  readonly sessionTimeoutMs: number;
  readonly cluster?: false;
}

/** A Redis Cluster. */
export interface RedisClusterInfo {
  /** `redis://host:port` of a seed node (no namespace): clients find the other nodes from it. */
  readonly url: string;
  readonly sessionTimeoutMs: number;
  readonly cluster: true;
  /** `host:port` of the nodes known when the run began (at least the seed). */
  readonly nodes: readonly string[];
}

export type RedisInfo = RedisStandaloneInfo | RedisClusterInfo;

/** An admin client: a plain one on a standalone server, a cluster client (routing by slot) on a cluster. */
export type RedisAdmin = Redis | Cluster;

/** A short-lived admin client for the checks and faults the tests need. */
export function withRedisAdmin<T>(info: RedisStandaloneInfo, use: (client: Redis) => Promise<T>): Promise<T>;
export function withRedisAdmin<T>(info: RedisClusterInfo, use: (client: Cluster) => Promise<T>): Promise<T>;
export function withRedisAdmin<T>(info: RedisInfo, use: (client: RedisAdmin) => Promise<T>): Promise<T>;
export async function withRedisAdmin<T>(info: RedisInfo, use: (client: never) => Promise<T>): Promise<T> {
  const client =
    info.cluster === true ? clusterAdmin(info) : new Redis(info.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined); // a server down: the command's own failure says so
  try {
    await (client instanceof Cluster ? connectCluster(client) : client.connect());
    return await (use as (client: RedisAdmin) => Promise<T>)(client);
  } finally {
    client.disconnect();
  }
}

/**
 * The cluster client's connect, failing if the client ends first: without a retry strategy, a ready
 * check sent to a node that is down (CLUSTER INFO, to a node picked at random) ends the client, and
 * ioredis 5 then leaves connect() pending for ever (seen with one master of three killed).
 */
function connectCluster(client: Cluster): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const ended = (): void =>
      reject(new Error('the Redis Cluster admin client ended before it was ready (a node down?)'));
    client.once('end', ended);
    client.connect().then(
      () => {
        client.off('end', ended);
        resolve();
      },
      (error: unknown) => {
        client.off('end', ended);
        reject(error);
      },
    );
  });
}

function clusterAdmin(info: RedisClusterInfo): Cluster {
  const url = new URL(info.url);
  const nodes: ClusterNode[] = info.nodes.map((node) => {
    const at = node.lastIndexOf(':');
    return { host: node.slice(0, at), port: Number(node.slice(at + 1)) };
  });
  return new Cluster(nodes, {
    lazyConnect: true,
    clusterRetryStrategy: () => null, // a cluster down: the check fails at once, saying so
    redisOptions: {
      maxRetriesPerRequest: 1,
      ...(url.username === '' ? {} : { username: decodeURIComponent(url.username) }),
      ...(url.password === '' ? {} : { password: decodeURIComponent(url.password) }),
    },
  });
}

/**
 * Runs `use` on every master, one after the other: the client itself on a standalone server, each
 * master node's own connection on a cluster (SCAN and KEYS see only the node they are sent to).
 */
export async function forEachMaster<T>(client: RedisAdmin, use: (node: Redis) => Promise<T>): Promise<T[]> {
  const results: T[] = [];
  for (const node of client instanceof Cluster ? client.nodes('master') : [client]) results.push(await use(node));
  return results;
}

/** Every key matching a glob pattern, on every master. */
async function scanKeys(client: RedisAdmin, pattern: string): Promise<string[]> {
  const perMaster = await forEachMaster(client, async (node) => {
    const keys: string[] = [];
    let cursor = '0';
    do {
      const [next, found] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      keys.push(...found);
    } while (cursor !== '0');
    return keys;
  });
  return [...new Set(perMaster.flat())];
}

/** Deletes key by key: a cluster refuses a DEL of keys in different slots. */
async function deleteKeys(client: RedisAdmin, keys: readonly string[]): Promise<void> {
  await Promise.all(keys.map((key) => client.del(key)));
}

/** A glob pattern matching `text` literally. */
function literal(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

/** Every key of a namespace's locks: `baton:{<namespace>/...}`. */
function namespaceKeys(client: RedisAdmin, namespace: string): Promise<string[]> {
  return scanKeys(client, `baton:{${literal(namespace)}/*`);
}

/** A session's liveness keys, one in each lock it used: `baton:{<namespace>/<lock>}:s:<id>`. */
function livenessKeys(client: RedisAdmin, sessionId: string): Promise<string[]> {
  return scanKeys(client, `baton:*:s:${literal(sessionId)}`);
}

/** `baton:{...}:s:<id>`: a liveness key, which expires on its own. */
const LIVENESS_KEY = /^baton:\{.*\}:s:[^:]+$/;

export function redisFixture(): Fixture {
  return redisFixtureOf(inject('redisStandalone'), 'Redis (standalone)');
}

/** The contract suites' fixture on the run's Redis Cluster. */
export function redisClusterFixture(): Fixture {
  return redisFixtureOf(inject('redisCluster'), 'Redis (cluster)');
}

/** The same fixture for any Redis server or cluster, e.g. one a fault test started for itself. */
export function redisFixtureOf(info: RedisInfo, name: string): Fixture {
  return {
    name,
    url: (namespace) => `${info.url}?namespace=${namespace}`,
    options: { sessionTimeoutMs: info.sessionTimeoutMs },
    entries: (namespace) =>
      withRedisAdmin(info, async (client) => {
        // Live entries: an entry whose owner's liveness key in that lock expired is dead (every script
        // ignores it and deletes it when it reads its queue), as an ephemeral node is gone with its session.
        const keys = await namespaceKeys(client, namespace);
        const queues = keys.filter((key) => key.endsWith(':q'));
        const entries: string[] = [];
        // Guarded values too (`<base>:v`: they outlive their writer, so one left behind is a leak).
        for (const values of keys.filter((key) => key.endsWith(':v')))
          entries.push(...(await client.hkeys(values)).map((name) => `${values}#${name}`));
        for (const queue of queues) {
          const base = queue.slice(0, -2);
          for (const id of await client.hkeys(queue)) {
            const owner = /^([0-9a-f]+)-\d+$/.exec(id)?.[1];
            if (owner === undefined || (await client.exists(`${base}:s:${owner}`)) === 1)
              entries.push(`${base}:e:${id}`);
          }
        }
        return entries.sort();
      }),
    watched: async (namespace) =>
      [...redisWatches.keys()].filter((key) => key.startsWith(`baton:{${namespace}/`)).sort(),
    notifications: () => redisCounters.notifications,
    expire: (session) => expireRedisSession(info, session),
    // As another baton client would (its release script tells the entry's channel); an entry deleted
    // by hand (HDEL alone) wakes its waiters at the next backstop read instead (redis.test.ts checks that).
    removeEntry: (key) =>
      withRedisAdmin(info, async (client) => {
        const at = key.lastIndexOf(':e:');
        await client.hdel(`${key.slice(0, at)}:q`, key.slice(at + 3));
        await client.publish(key, 'deleted');
      }),
    // Liveness keys are left to expire: one still there after close() is what liveSessions reports.
    cleanup: (namespace) =>
      withRedisAdmin(info, async (client) =>
        deleteKeys(
          client,
          (await namespaceKeys(client, namespace)).filter((key) => !LIVENESS_KEY.test(key)),
        ),
      ),
    // A session lives on while its main key or any of its liveness keys does: close() deletes them all.
    liveSessions: (ids) =>
      withRedisAdmin(info, async (client) => {
        const live: string[] = [];
        for (const id of ids) {
          if ((await client.exists(`baton:session:${id}`)) === 1 || (await livenessKeys(client, id)).length > 0)
            live.push(id);
        }
        return live;
      }),
    crossProcess: true,
    // The watchdog finds a deleted session key within a quarter of the timeout; a lost one by the deadline.
    lossDeadlineMs: info.sessionTimeoutMs * 3,
  };
}

/**
 * Ends a session from the server side, as its expiry would: its main key and its liveness key in
 * every lock are deleted (on a cluster, found on every master).
 */
export async function expireRedisSession(info: RedisInfo, session: Session): Promise<void> {
  const backend = backendOf(session);
  if (!(backend instanceof RedisDriver)) throw new Error('not a Redis session');
  await withRedisAdmin(info, async (client) => {
    await client.del(`baton:session:${backend.id}`);
    await deleteKeys(client, await livenessKeys(client, backend.id));
  });
}

/**
 * A redis-server of the test file's own, for tests that disturb the whole server (a restart, a
 * failover): started before the file's tests, stopped after them, with a scope of sessions on it.
 */
export function useOwnRedis(
  sessionTimeoutMs: number,
  options: RedisServerOptions = {},
): { scope: Scope; server: () => RedisServer; info: () => RedisStandaloneInfo } {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await startRedis(options);
  });
  afterAll(async () => {
    await server?.stop();
  });
  const info = (): RedisStandaloneInfo => {
    if (server === undefined) throw new Error('the own redis-server runs only inside the tests');
    return { url: `redis://${server.address}`, sessionTimeoutMs };
  };
  const scope = useScope(() => redisFixtureOf(info(), 'Redis (own server)'));
  return { scope, server: () => server!, info };
}

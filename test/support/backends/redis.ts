import { Redis } from 'ioredis';
import { afterAll, beforeAll, inject } from 'vitest';
import { redisCounters, redisWatches } from 'baton-locks/testing';
import { RedisDriver } from '../../../src/backends/redis/driver.js';
import type { Session } from '../../../recipes/contract.js';
import { startRedis, type RedisServer, type RedisServerOptions } from '../../harness/redis.js';
import type { Fixture } from './fixture.js';
import { useScope, type Scope } from './scope.js';
import { backendOf } from '../internals.js';

export interface RedisInfo {
  /** `redis://host:port` (no namespace). */
  readonly url: string;
  readonly sessionTimeoutMs: number;
}

/** A short-lived admin client for the checks and faults the tests need. */
export async function withRedisAdmin<T>(info: RedisInfo, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(info.url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined); // a server down: the command's own failure says so
  try {
    await client.connect();
    return await use(client);
  } finally {
    client.disconnect();
  }
}

/** Every key of a namespace's locks: `baton:{<namespace>/...}`. */
async function namespaceKeys(client: Redis, namespace: string): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, found] = await client.scan(cursor, 'MATCH', `baton:{${namespace}/*`, 'COUNT', 1000);
    cursor = next;
    keys.push(...found);
  } while (cursor !== '0');
  return keys;
}

export function redisFixture(): Fixture {
  return redisFixtureOf(inject('redisStandalone'), 'Redis (standalone)');
}

/** The same fixture for any Redis server, e.g. one a fault test started for itself. */
export function redisFixtureOf(info: RedisInfo, name: string): Fixture {
  return {
    name,
    url: (namespace) => `${info.url}?namespace=${namespace}`,
    options: { sessionTimeoutMs: info.sessionTimeoutMs },
    entries: (namespace) =>
      withRedisAdmin(info, async (client) => {
        // Live entries: an entry whose session key expired is dead (every script ignores it and
        // deletes it when it reads its queue), as an ephemeral node is gone with its session.
        const queues = (await namespaceKeys(client, namespace)).filter((key) => key.endsWith(':q'));
        const entries: string[] = [];
        for (const queue of queues) {
          const base = queue.slice(0, -2);
          for (const id of await client.hkeys(queue)) {
            const owner = /^([0-9a-f]+)-\d+$/.exec(id)?.[1];
            if (owner === undefined || (await client.exists(`baton:session:${owner}`)) === 1) entries.push(`${base}:e:${id}`);
          }
        }
        return entries.sort();
      }),
    watched: async (namespace) => [...redisWatches.keys()].filter((key) => key.startsWith(`baton:{${namespace}/`)).sort(),
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
    cleanup: (namespace) =>
      withRedisAdmin(info, async (client) => {
        const keys = await namespaceKeys(client, namespace);
        if (keys.length > 0) await client.del(...keys);
      }),
    liveSessions: (ids) =>
      withRedisAdmin(info, async (client) => {
        const live: string[] = [];
        for (const id of ids) if ((await client.exists(`baton:session:${id}`)) === 1) live.push(id);
        return live;
      }),
    crossProcess: true,
    // The watchdog finds a deleted session key within a quarter of the timeout; a lost one by the deadline.
    lossDeadlineMs: info.sessionTimeoutMs * 3,
  };
}

/** Ends a session from the server side: its key is deleted, as its expiry would. */
export async function expireRedisSession(info: RedisInfo, session: Session): Promise<void> {
  const backend = backendOf(session);
  if (!(backend instanceof RedisDriver)) throw new Error('not a Redis session');
  await withRedisAdmin(info, async (client) => void (await client.del(`baton:session:${backend.id}`)));
}

/**
 * A redis-server of the test file's own, for tests that disturb the whole server (a restart, a
 * failover): started before the file's tests, stopped after them, with a scope of sessions on it.
 */
export function useOwnRedis(sessionTimeoutMs: number, options: RedisServerOptions = {}): { scope: Scope; server: () => RedisServer; info: () => RedisInfo } {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await startRedis(options);
  });
  afterAll(async () => {
    await server?.stop();
  });
  const info = (): RedisInfo => {
    if (server === undefined) throw new Error('the own redis-server runs only inside the tests');
    return { url: `redis://${server.address}`, sessionTimeoutMs };
  };
  const scope = useScope(() => redisFixtureOf(info(), 'Redis (own server)'));
  return { scope, server: () => server!, info };
}

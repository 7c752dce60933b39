import { randomUUID } from 'node:crypto';

import { RedisFence, StaleTokenError } from 'baton-locks/fence';
import { describe, expect, inject, it } from 'vitest';

import { InvalidArgumentError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import type { Fixture } from '../../harness/backends/fixture.js';
import {
  type RedisAdmin,
  redisClusterFixture,
  redisFixture,
  type RedisInfo,
  withRedisAdmin,
} from '../../harness/backends/redis.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';
import { shuffled, uniqueTokens } from './tokens.js';

const layouts: { name: string; info: () => RedisInfo; fixture: () => Fixture }[] = [
  { name: 'Redis (standalone)', info: () => inject('redisStandalone'), fixture: redisFixture },
  { name: 'Redis (cluster)', info: () => inject('redisCluster'), fixture: redisClusterFixture },
];

/** The mark and the data keys of one test: the resource is their hash tag (one slot on a cluster). */
function keysOf(resource: string): { mark: string; data: string; other: string } {
  return { mark: RedisFence.markKey(resource), data: `app:{${resource}}:settled`, other: `app:{${resource}}:h` };
}

/** Runs `use` with `count` connections of their own (writers that race on the server, not in one pipe). */
function withClients<T>(
  info: RedisInfo,
  count: number,
  use: (clients: RedisAdmin[]) => Promise<T>,
  clients: RedisAdmin[] = [],
): Promise<T> {
  if (count === 0) return use(clients);
  return withRedisAdmin(info, (client) => withClients(info, count - 1, use, [...clients, client]));
}

async function cleanup(client: RedisAdmin, resource: string): Promise<void> {
  for (const key of Object.values(keysOf(resource))) await client.del(key);
}

describe.each(layouts)('the Redis fence on $name', ({ info, fixture }) => {
  const scope = useScope(fixture);

  it("refuses the late write of a holder whose session expired, after the next holder wrote; the key keeps the successor's value", async () => {
    const resource = `ledger/${randomUUID().slice(0, 8)}`;
    const keys = keysOf(resource);
    const [expiring, other] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(expiring, 'settlement').acquire();
    const next = new FairMutex(other, 'settlement').acquire({ timeoutMs: 20_000 });
    await eventually('the waiter queued', async () => (await backendOf(other).list('settlement')).length === 2);
    await scope.fixture.expire(expiring);
    const successor = await next;
    await withRedisAdmin(info(), async (client) => {
      const fence = new RedisFence(client);
      try {
        await fence.set(resource, successor.fencingToken, keys.data, 'node-b');
        const late = await fence.set(resource, held.fencingToken, keys.data, 'node-a').catch((e: unknown) => e);
        expect(late).toBeInstanceOf(StaleTokenError);
        expect(late).toMatchObject({
          code: 'STALE_TOKEN',
          resource,
          token: held.fencingToken,
          mark: successor.fencingToken,
        });
        expect(await client.get(keys.data)).toBe('node-b');
        expect(await client.get(keys.mark)).toBe(successor.fencingToken.toString());
        // The same holder writes again with its token (an equal token passes), by each operation.
        await fence.hset(resource, successor.fencingToken, keys.other, { period: '12', by: 'node-b' });
        expect(await client.hgetall(keys.other)).toEqual({ period: '12', by: 'node-b' });
        await expect(fence.del(resource, held.fencingToken, keys.other)).rejects.toBeInstanceOf(StaleTokenError);
        expect(await client.exists(keys.other)).toBe(1);
        await fence.del(resource, successor.fencingToken, keys.other);
        expect(await client.exists(keys.other)).toBe(0);
      } finally {
        await cleanup(client, resource);
        await successor.release();
      }
    });
  });

  it('never moves a mark backwards under 60 concurrent writers on 4 connections, tokens in random order', async () => {
    const resource = `concurrent/${randomUUID().slice(0, 8)}`;
    const keys = keysOf(resource);
    const tokens = shuffled(uniqueTokens(60));
    await withClients(info(), 4, async (clients) => {
      const outcomes = await Promise.all(
        tokens.map((token, i) =>
          new RedisFence(clients[i % clients.length]!).set(resource, token, keys.data, token.toString()).then(
            () => 'accepted' as const,
            (error: unknown) => {
              expect(error).toBeInstanceOf(StaleTokenError);
              expect((error as StaleTokenError).mark > token).toBe(true);
              return 'refused' as const;
            },
          ),
        ),
      );
      const highest = tokens.reduce((a, b) => (a > b ? a : b));
      const client = clients[0]!;
      expect(await client.get(keys.mark)).toBe(highest.toString());
      // The highest token's write is accepted whenever it comes; any write after it would be refused.
      expect(await client.get(keys.data)).toBe(highest.toString());
      expect(outcomes).toContain('accepted');
      await cleanup(client, resource);
    });
  });

  it('compares tokens as 64-bit numbers (not as text, not as doubles), and leaves the mark when the write fails', async () => {
    const resource = `wide/${randomUUID().slice(0, 8)}`;
    const keys = keysOf(resource);
    await withRedisAdmin(info(), async (client) => {
      const fence = new RedisFence(client);
      try {
        const big = 2n ** 63n - 2n; // above 2^53: a double cannot tell it from its neighbour
        await fence.set(resource, big, keys.data, 'big');
        await expect(fence.set(resource, big - 1n, keys.data, 'x')).rejects.toMatchObject({ mark: big });
        await fence.set(resource, big + 1n, keys.data, 'bigger');
        const narrow = `narrow/${randomUUID().slice(0, 8)}`;
        await fence.set(narrow, 10n, keysOf(narrow).data, 'ten');
        await expect(fence.set(narrow, 9n, keysOf(narrow).data, 'nine')).rejects.toBeInstanceOf(StaleTokenError);
        await cleanup(client, narrow);
        // A write the server refuses (HSET on a string) is an error, and the mark stays where it was.
        await expect(fence.hset(resource, 2n ** 63n - 1n, keys.data, { f: 'v' })).rejects.toThrow(/WRONGTYPE/);
        expect(await client.get(keys.mark)).toBe((big + 1n).toString());
        await fence.set(resource, big + 1n, keys.data, 'again', { px: 60_000 });
        expect(await client.pttl(keys.data)).toBeGreaterThan(0);
      } finally {
        await cleanup(client, resource);
      }
    });
  });

  it("refuses a data key outside the mark's hash tag, a resource with braces, and bad options, before sending anything", async () => {
    await withRedisAdmin(info(), async (client) => {
      const fence = new RedisFence(client);
      await expect(fence.set('r', 1n, 'no-tag', 'v')).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(fence.set('r', 1n, 'app:{other}:x', 'v')).rejects.toThrow(/hash tag \{r\}/);
      await expect(fence.set('a{b}', 1n, 'app:{a{b}', 'v')).rejects.toThrow(/without "\{"/);
      await expect(fence.set('r', 1n, 'app:{r}', 'v', { ttl: 5 } as never)).rejects.toThrow(/ttl/);
      await expect(fence.set('r', -1n, 'app:{r}', 'v')).rejects.toThrow(/fencing token/);
      await expect(fence.hset('r', 1n, 'app:{r}', {})).rejects.toThrow(/fields/);
      expect(() => new RedisFence({} as never)).toThrow(/ioredis/);
      expect(await client.exists(RedisFence.markKey('r'))).toBe(0);
    });
  });
});

import { Etcd3 } from 'etcd3';
import zookeeper from 'node-zookeeper-client';
import { describe, expect, inject, it } from 'vitest';

import { FairMutex } from '../../recipes/mutex.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import type { ForeignKey } from '../../src/session.js';
import { etcdFixture } from '../harness/backends/etcd.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { redisFixture, withRedisAdmin } from '../harness/backends/redis.js';
import { useScope } from '../harness/backends/scope.js';
import { zkFixture } from '../harness/backends/zookeeper.js';
import { backendOf } from '../harness/internals.js';
import { withZkClient } from '../harness/servers/clean.js';
import { eventually, later } from '../harness/wait.js';

/** Puts nodes or keys that baton did not create into a queue; returns their full keys. */
type Plant = (namespace: string, queue: string) => Promise<string[]>;

const plantZk: Plant = (namespace, queue) => {
  const dir = `/${namespace}/${queue}`;
  // Not a valid lock name (so not a nested lock), an `_c_` name that is no client's entry, and a
  // sequential node of a client baton does not know (which may believe it queues here).
  const names = ['not a lock!', '_c_garbage', '4f1c9a__lease__0000000001'];
  return withZkClient(inject('zkStandalone').connectString, async (client) => {
    await new Promise<void>((resolve, reject) => client.mkdirp(dir, (error) => (error ? reject(error) : resolve())));
    for (const name of names) {
      await new Promise<void>((resolve, reject) =>
        client.create(`${dir}/${name}`, Buffer.from('x'), zookeeper.CreateMode.PERSISTENT, (error) =>
          error ? reject(error) : resolve(),
        ),
      );
    }
    return names.map((name) => `${dir}/${name}`);
  });
};

const plantEtcd: Plant = async (namespace, queue) => {
  const client = new Etcd3({ hosts: inject('etcdStandalone').endpoints });
  try {
    // The last is named like an entry, but has no lease (put by hand, or copied by `etcdctl make-mirror`).
    const keys = [
      `${namespace}/${queue}/#/not-ours`,
      `${namespace}/${queue}/#/zzzz-1-lock`,
      `${namespace}/${queue}/#/00000000deadbeef-0-lock`,
    ];
    for (const key of keys) await client.put(key).value('x');
    return keys;
  } finally {
    client.close();
  }
};

const plantRedis: Plant = (namespace, queue) =>
  withRedisAdmin(inject('redisStandalone'), async (client) => {
    // Fields of the queue's hash that are no entry id, or whose value is not baton's.
    const base = `baton:{${namespace}/${queue}}`;
    const fields = ['not ours!', 'ZZZZ-1'];
    for (const field of fields) await client.hset(`${base}:q`, field, 'x');
    return fields.map((field) => `${base}:e:${field}`);
  });

function foreignSuite(getFixture: () => Fixture, plant: Plant): void {
  describe(`foreign entries on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it('are ignored by the ordering, never break a waiter, and are reported once each', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const planted = await plant(scope.namespace, 'jobs');
      const seen: ForeignKey[] = [];
      b.on('foreign', (found) => seen.push(found));
      const held = await new FairMutex(a, 'jobs').acquire();
      const waiting = later(new FairMutex(b, 'jobs').acquire({ timeoutMs: 10_000 }));
      await eventually('b queued', async () => (await backendOf(b).list('jobs')).length === 2, 5_000);
      // Several more listings of the queue: reports come once per key and session all the same.
      for (let i = 0; i < 3; i += 1) expect(await backendOf(b).list('jobs')).toHaveLength(2);
      await held.release();
      const next = await waiting;
      expect(next.held).toBe(true);
      await next.release();
      // Shared locks decide on the same listings.
      const reader = await new ReadWriteLock(b, 'jobs').readLock.acquire();
      await reader.release();
      expect(seen.map((found) => found.key).sort()).toEqual([...planted].sort());
      expect(seen.every((found) => found.queue === 'jobs')).toBe(true);
      for (const key of planted) await scope.fixture.removeEntry(key);
    });

    it('a listener that throws breaks neither the acquire nor the queue; its error is rethrown on its own', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      await plant(scope.namespace, 'jobs').then((keys) => planted.push(...keys));
      const failure = new Error('listener bug');
      a.on('foreign', () => {
        throw failure;
      });
      const uncaught: unknown[] = [];
      const previous = process.listeners('uncaughtException');
      process.removeAllListeners('uncaughtException');
      process.on('uncaughtException', (error) => void uncaught.push(error));
      try {
        const lock = await new FairMutex(a, 'jobs').acquire({ timeoutMs: 5_000 });
        await lock.release();
        // Nothing of a's is left to block the queue.
        await (await new FairMutex(b, 'jobs').acquire({ timeoutMs: 5_000 })).release();
        await new Promise((resolve) => setImmediate(resolve));
      } finally {
        process.removeAllListeners('uncaughtException');
        for (const listener of previous) process.on('uncaughtException', listener);
      }
      expect(uncaught).toEqual(planted.map(() => failure));
      for (const key of planted.splice(0)) await scope.fixture.removeEntry(key);
    });
  });
}

const planted: string[] = [];

foreignSuite(() => zkFixture('zkStandalone'), plantZk);
foreignSuite(() => etcdFixture('etcdStandalone'), plantEtcd);
foreignSuite(redisFixture, plantRedis);

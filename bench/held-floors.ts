import { randomUUID } from 'node:crypto';

import { Etcd3 } from 'etcd3';
import { Redis } from 'ioredis';
import zookeeper from 'node-zookeeper-client';
import pg from 'pg';

import { create, getChildren } from '../src/backends/zookeeper/client.js';
import { corked } from '../src/backends/zookeeper/client/pipeline.js';
import { mkdirp } from '../src/backends/zookeeper/mkdirp.js';
import { FLOOR_NODE } from './floor-name.js';
import { openClient } from './zk-client.js';

/**
 * The least it takes to hold `n` distinct locks at once on one connection, on the same client baton
 * drives: each lock's enqueue request (its entry and the look at its queue), all sent at once. The
 * entries go when the connection closes (or the table or keys are dropped).
 */
export type HeldFloor = (n: number) => Promise<{ close(): Promise<void> }>;

/** ZooKeeper: each lock's directory, then create+getChildren in one write. */
export function zkHeldFloor(hosts: string, base: string): HeldFloor {
  return async (n) => {
    const client = await openClient(hosts);
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const dir = `${base}/${i}`;
        await mkdirp(client, dir);
        await Promise.all(
          corked(client, () => [
            create(client, `${dir}/${FLOOR_NODE}`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL),
            getChildren(client, dir),
          ]),
        );
      }),
    );
    return { close: async () => client.close() };
  };
}

/** etcd: a Txn per lock that puts its key under one lease and reads the lock's first key. */
export function etcdHeldFloor(endpoint: string, base: string): HeldFloor {
  return async (n) => {
    const client = new Etcd3({ hosts: [endpoint] });
    const lease = await client.leaseClient.leaseGrant({ TTL: 3600, ID: 0 });
    await Promise.all(
      Array.from({ length: n }, async (_, i) => {
        const prefix = `${base}/${i}/`;
        await client.kv.txn({
          compare: [],
          success: [
            { request_put: { key: Buffer.from(`${prefix}${randomUUID()}`), value: Buffer.alloc(0), lease: lease.ID } },
            {
              request_range: {
                key: Buffer.from(prefix),
                range_end: Buffer.from(`${base}/${i}0`),
                keys_only: true,
                sort_target: 'Create',
                limit: 1,
              },
            },
          ],
          failure: [],
        });
      }),
    );
    return {
      close: async () => {
        await client.leaseClient.leaseRevoke({ ID: lease.ID });
        client.close();
      },
    };
  };
}

/** PostgreSQL: one INSERT per lock into a table keyed by (lock, id), on one connection. */
export function postgresHeldFloor(url: string, table: string): HeldFloor {
  return async (n) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(
      `DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (lock text, id bigserial, PRIMARY KEY (lock, id))`,
    );
    for (let i = 0; i < n; i += 1)
      await client.query(
        `WITH e AS (INSERT INTO ${table} (lock) VALUES ($1) RETURNING id) SELECT (SELECT min(q.id) FROM ${table} q WHERE q.lock = $1) FROM e`,
        [String(i)],
      );
    return {
      close: async () => {
        await client.query(`DROP TABLE IF EXISTS ${table}`);
        await client.end();
      },
    };
  };
}

/** Redis: one RPUSH per lock (its queue; the reply says whether it is first), pipelined by ioredis. */
export function redisHeldFloor(url: string, base: string): HeldFloor {
  return async (n) => {
    const client = new Redis(url);
    await Promise.all(Array.from({ length: n }, (_, i) => client.rpush(`${base}:${i}`, 'floor')));
    return {
      close: async () => {
        for (let i = 0; i < n; i += 1000)
          await client.del(...Array.from({ length: Math.min(1000, n - i) }, (_, k) => `${base}:${i + k}`));
        client.disconnect();
      },
    };
  };
}

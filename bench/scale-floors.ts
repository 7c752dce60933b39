import { randomUUID } from 'node:crypto';

import { Etcd3 } from 'etcd3';
import { Redis } from 'ioredis';
import zookeeper from 'node-zookeeper-client';
import pg from 'pg';

import { create, getChildren, remove, watchData, type ZkClient } from '../src/backends/zookeeper/client.js';
import { corked } from '../src/backends/zookeeper/client/pipeline.js';
import { mkdirp } from '../src/backends/zookeeper/mkdirp.js';
import { FLOOR_NODE } from './floor-name.js';
import { openClient } from './zk-client.js';

/** One entry of a raw queue: its turn (resolves once everything ahead of it has gone) and its release. */
export interface FloorEntry {
  readonly turn: Promise<void>;
  release(): Promise<void>;
}

/**
 * The least a fair queue lock does on one backend, written on the same client library baton drives:
 * an enqueue that learns the entry just ahead in one request, a wait for that entry to go (a watch, a
 * NOTIFY, a message), a release of one request. No timeouts, no session tracking, no withdrawals, so
 * the entry ahead only ever goes by being released.
 */
export interface FloorQueue {
  enqueue(): Promise<FloorEntry>;
  /** Requests the floor has sent so far (counted at the client). */
  readonly requests: number;
  close(): Promise<void>;
}

/** Resolvers of turns waiting on a released id, and the ids released before their waiter looked. */
class Turns<Id> {
  readonly #waiting = new Map<Id, () => void>();
  readonly #released = new Set<Id>();

  /** A turn that comes once `ahead` is released (at once if it is undefined or already was). */
  after(ahead: Id | undefined): Promise<void> {
    if (ahead === undefined || this.#released.delete(ahead)) return Promise.resolve();
    return new Promise((resolve) => this.#waiting.set(ahead, resolve));
  }

  released(id: Id): void {
    const resolve = this.#waiting.get(id);
    if (resolve === undefined) this.#released.add(id);
    else {
      this.#waiting.delete(id);
      resolve();
    }
  }
}

/** The entry just ahead of `name` in sequence order, if any. */
function predecessor(children: readonly string[], name: string): string | undefined {
  let ahead: string | undefined;
  for (const child of children) if (child < name && (ahead === undefined || child > ahead)) ahead = child;
  return ahead;
}

/** ZooKeeper: create+getChildren in one write, a data watch on the node just ahead, delete. */
export async function zkFloor(hosts: string, dir: string, connections: number): Promise<FloorQueue> {
  const clients: ZkClient[] = [];
  for (let i = 0; i < connections; i += 1) clients.push(await openClient(hosts));
  await mkdirp(clients[0]!, dir);
  let next = 0;
  const floor = {
    requests: 0,
    async enqueue(): Promise<FloorEntry> {
      const client = clients[(next += 1) % clients.length]!;
      floor.requests += 2;
      const [path, listing] = await Promise.all(
        corked(client, () => [
          create(client, `${dir}/${FLOOR_NODE}`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL),
          getChildren(client, dir),
        ]),
      );
      const ahead = predecessor(listing.children, path.slice(dir.length + 1));
      floor.requests += ahead === undefined ? 0 : 1;
      const turn =
        ahead === undefined
          ? Promise.resolve()
          : new Promise<void>((resolve, reject) => {
              watchData(client, `${dir}/${ahead}`, () => resolve()).then((present) => present || resolve(), reject);
            });
      return {
        turn,
        release: () => {
          floor.requests += 1;
          return remove(client, path);
        },
      };
    },
    close: async () => {
      for (const client of clients) client.close();
    },
  };
  return floor;
}

/**
 * etcd: one Txn puts the key under a lease and reads the two newest keys by create revision (its own
 * and the one just ahead: the Txn is atomic), a watch from the Txn's revision on for the delete of
 * the key ahead, a delete to release.
 */
export async function etcdFloor(endpoint: string, prefix: string): Promise<FloorQueue> {
  const client = new Etcd3({ hosts: [endpoint] });
  const lease = await client.leaseClient.leaseGrant({ TTL: 3600, ID: 0 });
  const range = { key: Buffer.from(prefix), range_end: Buffer.from(`${prefix.slice(0, -1)}0`), keys_only: true };
  const floor = {
    requests: 0,
    async enqueue(): Promise<FloorEntry> {
      const key = `${prefix}${randomUUID()}`;
      floor.requests += 1;
      const reply = await client.kv.txn({
        compare: [],
        success: [
          { request_put: { key: Buffer.from(key), value: Buffer.alloc(0), lease: lease.ID } },
          { request_range: { ...range, sort_target: 'Create', sort_order: 'Descend', limit: 2 } },
        ],
        failure: [],
      });
      const kvs = reply.responses[1]!.response_range.kvs;
      const ahead = kvs.length > 1 ? kvs[1]!.key.toString() : undefined;
      const turn = ahead === undefined ? Promise.resolve() : deleted(client, ahead, Number(reply.header.revision));
      return {
        turn,
        release: async () => {
          floor.requests += 1;
          await client.kv.deleteRange({ key: Buffer.from(key) });
        },
      };
    },
    close: async () => {
      await client.leaseClient.leaseRevoke({ ID: lease.ID }).catch(() => undefined);
      client.close();
    },
  };
  return floor;
}

/** Resolves once `key` is deleted at a revision after `revision`. */
async function deleted(client: Etcd3, key: string, revision: number): Promise<void> {
  const watcher = await client
    .watch()
    .key(key)
    .startRevision(String(revision + 1))
    .create();
  await new Promise<void>((resolve) => watcher.once('delete', () => resolve()));
  await watcher.cancel();
}

/**
 * PostgreSQL: an INSERT into a queue table that returns the id just ahead (an index probe), a DELETE
 * that NOTIFYs the released id, one LISTEN connection for the whole queue. The requests go on one
 * connection, one after another: with several, an INSERT could miss an earlier one not yet committed.
 */
export async function postgresFloor(url: string, table: string): Promise<FloorQueue> {
  const main = new pg.Client({ connectionString: url });
  const listen = new pg.Client({ connectionString: url });
  await main.connect();
  await listen.connect();
  await main.query(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (id bigserial PRIMARY KEY)`);
  const turns = new Turns<string>();
  listen.on('notification', (message) => turns.released(message.payload ?? ''));
  await listen.query(`LISTEN ${table}`);
  // node-postgres queues overlapping queries itself but deprecates it: one after another, in order.
  let last: Promise<unknown> = Promise.resolve();
  const serial = <T>(query: () => Promise<T>): Promise<T> => {
    const result = last.then(query);
    last = result.catch(() => undefined);
    return result;
  };
  const floor = {
    requests: 0,
    async enqueue(): Promise<FloorEntry> {
      floor.requests += 1;
      const { rows } = await serial(() =>
        main.query<{ id: string; ahead: string | null }>(
          `WITH e AS (INSERT INTO ${table} DEFAULT VALUES RETURNING id)
           SELECT e.id::text AS id, (SELECT max(q.id) FROM ${table} q WHERE q.id < e.id)::text AS ahead FROM e`,
        ),
      );
      const { id, ahead } = rows[0]!;
      return {
        turn: turns.after(ahead ?? undefined),
        release: async () => {
          floor.requests += 1;
          await serial(() =>
            main.query(`WITH d AS (DELETE FROM ${table} WHERE id = $1) SELECT pg_notify($2, $3)`, [id, table, id]),
          );
        },
      };
    },
    close: async () => {
      await main.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
      await Promise.all([main.end(), listen.end()]);
    },
  };
  return floor;
}

/**
 * Redis: INCR hands out tickets (the one ahead is the ticket before), a release PUBLISHes its ticket,
 * one subscribed connection for the whole queue.
 */
export async function redisFloor(url: string, key: string): Promise<FloorQueue> {
  const client = new Redis(url);
  const subscriber = new Redis(url);
  await client.del(key);
  const turns = new Turns<number>();
  subscriber.on('message', (_channel: string, ticket: string) => turns.released(Number(ticket)));
  await subscriber.subscribe(key);
  let first: number | undefined;
  const floor = {
    requests: 0,
    async enqueue(): Promise<FloorEntry> {
      floor.requests += 1;
      const ticket = await client.incr(key);
      first ??= ticket;
      return {
        turn: turns.after(ticket === first ? undefined : ticket - 1),
        release: async () => {
          floor.requests += 1;
          await client.publish(key, String(ticket));
        },
      };
    },
    close: async () => {
      await client.del(key).catch(() => undefined);
      client.disconnect();
      subscriber.disconnect();
    },
  };
  return floor;
}

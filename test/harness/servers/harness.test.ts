import { existsSync, readFileSync } from 'node:fs';

import { Etcd3 } from 'etcd3';
import { Cluster } from 'ioredis';
import zookeeper from 'node-zookeeper-client';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { eventually } from '../wait.js';
import { zkTree } from './clean.js';
import { type EtcdCluster, startEtcd } from './etcd.js';
import { fourLetterWord } from './four-letter.js';
import { startPostgres } from './postgres.js';
import { TcpProxy } from './proxy.js';
import { type RedisCluster, reply, startRedisCluster } from './redis.js';
import { startZooKeeper, type ZkCluster } from './zookeeper.js';

/** The harness itself: real servers start, fail over, restart and stop; the proxy cuts as told. */
describe('test harness', () => {
  it('starts a PostgreSQL 15 in a temp dir as an unprivileged user, restarts it on its port, and stops it by PID', async () => {
    const server = await startPostgres();
    try {
      const pid = server.pid!;
      // The server refuses to run as root: as root the harness runs it as the postgres user.
      const uid = Number(/^Uid:\s+(\d+)/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1]);
      expect(uid).not.toBe(0);
      const query = async (): Promise<string> => {
        const client = new pg.Client({ connectionString: server.url });
        await client.connect();
        try {
          return String((await client.query('SHOW server_version')).rows[0].server_version);
        } finally {
          await client.end();
        }
      };
      expect(await query()).toMatch(/^\d+\./);
      await server.kill('SIGQUIT');
      expect(server.isAlive()).toBe(false);
      await server.start();
      expect(server.port).toBe(Number(new URL(server.url).port));
      expect(await query()).toMatch(/^\d+\./);
    } finally {
      await server.stop();
    }
    expect(server.isAlive()).toBe(false);
    expect(existsSync(server.dir)).toBe(false);
  }, 60_000);

  describe('Redis Cluster of 3 masters', () => {
    let cluster: RedisCluster;
    beforeAll(async () => {
      cluster = await startRedisCluster({ masters: 3 });
    });
    afterAll(async () => {
      const pids = cluster.members.map((m) => m.pid);
      await cluster.stop();
      expect(pids.every((pid) => pid !== undefined)).toBe(true);
      expect(cluster.members.every((m) => !m.isAlive())).toBe(true);
      expect(cluster.members.filter((m) => existsSync(m.dir))).toEqual([]);
    });

    const clusterInfo = async (port: number): Promise<Record<string, string>> =>
      Object.fromEntries(
        (await reply(port, ['CLUSTER', 'INFO']))
          .split(/\r?\n/)
          .filter(Boolean)
          .map((line) => line.split(':') as [string, string]),
      );

    it('serves every slot, each master a share, to a cluster client that found the nodes from one seed', async () => {
      for (const member of cluster.members) {
        expect(await clusterInfo(member.port)).toMatchObject({
          cluster_state: 'ok',
          cluster_slots_ok: '16384',
          cluster_known_nodes: '3',
          cluster_size: '3',
        });
      }
      const client = new Cluster([{ host: '127.0.0.1', port: cluster.members[0]!.port }], {
        clusterRetryStrategy: () => null,
      });
      try {
        const masters = await new Promise<number>((resolve, reject) => {
          client.once('ready', () => resolve(client.nodes('master').length));
          client.once('error', reject);
        });
        expect(masters).toBe(3);
        // Keys hashing all over the slot space: every master gets some.
        for (let i = 0; i < 60; i += 1) await client.set(`harness:${i}`, String(i));
        const sizes = await Promise.all(client.nodes('master').map((node) => node.dbsize()));
        expect(sizes.every((size) => size > 0)).toBe(true);
        expect(sizes.reduce((a, b) => a + b, 0)).toBe(60);
      } finally {
        client.disconnect();
      }
    });

    it('takes back a killed node restarted from its nodes.conf', async () => {
      const node = cluster.members[1]!;
      await node.kill();
      expect(node.isAlive()).toBe(false);
      await node.start();
      await eventually(
        'the cluster whole again',
        async () => {
          const infos = await Promise.all(cluster.members.map((m) => clusterInfo(m.port)));
          return infos.every((info) => info['cluster_state'] === 'ok' && info['cluster_known_nodes'] === '3');
        },
        20_000,
      );
    }, 30_000);
  });

  it('forms a Redis Cluster of 3 masters with a replica each: every replica follows its own master, its link up, and all of it goes on stop', async () => {
    const cluster = await startRedisCluster({ masters: 3, replicas: 1 });
    try {
      expect(cluster.members).toHaveLength(6);
      expect(cluster.members).toEqual([...cluster.masters, ...cluster.replicas.flat()]);
      const info = async (port: number, section: string[]): Promise<Record<string, string>> =>
        Object.fromEntries(
          (await reply(port, section))
            .split(/\r?\n/)
            .filter((line) => line.includes(':'))
            .map((line) => line.split(':', 2) as [string, string]),
        );
      for (const member of cluster.members)
        expect(await info(member.port, ['CLUSTER', 'INFO'])).toMatchObject({
          cluster_state: 'ok',
          cluster_known_nodes: '6',
          cluster_size: '3',
        });
      for (const [m, master] of cluster.masters.entries()) {
        expect(await info(master.port, ['INFO', 'replication'])).toMatchObject({
          role: 'master',
          connected_slaves: '1',
        });
        expect(cluster.replicas[m]).toHaveLength(1);
        expect(await info(cluster.replicas[m]![0]!.port, ['INFO', 'replication'])).toMatchObject({
          role: 'slave',
          master_port: String(master.port),
          master_link_status: 'up',
        });
      }
    } finally {
      await cluster.stop();
    }
    expect(cluster.members.filter((m) => m.isAlive())).toEqual([]);
    expect(cluster.members.filter((m) => existsSync(m.dir))).toEqual([]);
  }, 60_000);

  describe('ZooKeeper 3-node ensemble', () => {
    let zk: ZkCluster;
    beforeAll(async () => {
      zk = await startZooKeeper({ size: 3 });
    });
    afterAll(async () => {
      const pids = zk.members.map((m) => m.pid);
      await zk.stop();
      expect(zk.members.every((m) => !m.isAlive())).toBe(true);
      expect(pids.every((pid) => pid !== undefined)).toBe(true);
    });

    it('elects a new leader when the leader is killed, and the old one rejoins as a follower', async () => {
      const leader = await zk.leader();
      expect(leader).toBeDefined();
      expect(await fourLetterWord(leader!.clientPort, 'ruok')).toBe('imok');
      await leader!.kill();
      expect(leader!.isAlive()).toBe(false);
      let next: typeof leader;
      for (let i = 0; i < 200 && (next === undefined || next === leader); i += 1) {
        next = await zk.leader();
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      expect(next).toBeDefined();
      expect(next).not.toBe(leader);
      await leader!.start();
      expect(await fourLetterWord(leader!.clientPort, 'srvr')).toMatch(/Mode: follower/);
    }, 60_000);
  });

  describe('etcd', () => {
    let single: EtcdCluster;
    let cluster: EtcdCluster;
    beforeAll(async () => {
      [single, cluster] = await Promise.all([startEtcd({ size: 1 }), startEtcd({ size: 3 })]);
    });
    afterAll(async () => {
      await Promise.all([single.stop(), cluster.stop()]);
      expect([...single.members, ...cluster.members].every((m) => !m.isAlive())).toBe(true);
    });

    it('serves a standalone member', async () => {
      const client = new Etcd3({ hosts: single.endpoints });
      try {
        await client.put('harness/a').value('1');
        expect(await client.get('harness/a').string()).toBe('1');
        expect(await single.leader()).toBe(single.members[0]);
      } finally {
        client.close();
      }
    });

    it('keeps serving when the cluster leader is killed, and takes it back after a restart', async () => {
      const client = new Etcd3({ hosts: cluster.endpoints });
      try {
        const leader = await cluster.leader();
        expect(leader).toBeDefined();
        await leader!.kill();
        await client.put('harness/b').value('2');
        expect(await client.get('harness/b').string()).toBe('2');
        await leader!.start();
        expect(leader!.isAlive()).toBe(true);
        const fromRestarted = new Etcd3({ hosts: [leader!.clientUrl] });
        try {
          expect(await fromRestarted.get('harness/b').string()).toBe('2');
        } finally {
          fromRestarted.close();
        }
      } finally {
        client.close();
      }
    }, 60_000);
  });

  describe('TCP proxy', () => {
    const SESSION_TIMEOUT_MS = 4_000;
    let zk: ZkCluster;
    let proxy: TcpProxy;
    let client: zookeeper.Client;
    beforeAll(async () => {
      zk = await startZooKeeper({ size: 1 });
      proxy = await TcpProxy.start({ port: zk.members[0]!.clientPort });
      client = zookeeper.createClient(proxy.address, { sessionTimeout: SESSION_TIMEOUT_MS, spinDelay: 50 });
      await new Promise<void>((resolve) => {
        client.once('connected', () => resolve());
        client.connect();
      });
    });
    afterAll(async () => {
      client.close();
      await proxy.close();
      await zk.stop();
    });

    const exists = (path: string): Promise<boolean> =>
      new Promise((resolve, reject) =>
        client.exists(path, (error, stat) => (error ? reject(error) : resolve(stat !== null && stat !== undefined))),
      );

    it('forwards, stalls requests in a blackhole, and resumes on restore', async () => {
      expect(await exists('/')).toBe(true);
      proxy.blackhole();
      let answered = false;
      const stalled = exists('/').then(() => (answered = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(answered).toBe(false);
      proxy.restore();
      await stalled;
      expect(answered).toBe(true);
    });

    it('drop() disconnects the client, which reconnects', async () => {
      const disconnected = new Promise<void>((resolve) => client.once('disconnected', () => resolve()));
      const reconnected = new Promise<void>((resolve) => client.once('connected', () => resolve()));
      proxy.drop();
      await disconnected;
      await reconnected;
      expect(await exists('/')).toBe(true);
    });

    it('dropAfterNextRequest lets the request reach the server but not its reply', async () => {
      // The client must not come back before the server has applied the create: a reconnect that
      // overtook it would make the server refuse the create (session moved).
      proxy.refuse();
      const cut = proxy.dropAfterNextRequest((chunk) => chunk.includes('/proxied'));
      const reconnected = new Promise<void>((resolve) => client.once('connected', () => resolve()));
      const created = new Promise<unknown>((resolve) => client.create('/proxied', (error) => resolve(error)));
      await cut;
      const error = await created;
      expect(error).toBeInstanceOf(zookeeper.Exception);
      expect((error as zookeeper.Exception).getCode()).toBe(zookeeper.Exception.CONNECTION_LOSS);
      // Seen by a client of its own, straight on the server: the request got there, its reply did not.
      const direct = `127.0.0.1:${zk.members[0]!.clientPort}`;
      await eventually(
        'the cut create applied',
        async () => (await zkTree(direct, '/proxied')).length === 1,
        SESSION_TIMEOUT_MS,
      );
      proxy.restore();
      await reconnected;
      expect(await exists('/proxied')).toBe(true);
      await new Promise<void>((resolve, reject) => client.remove('/proxied', -1, (e) => (e ? reject(e) : resolve())));
    });
  });
});

import net from 'node:net';

import { connect, redisCounters } from 'baton-locks/testing';
import type { Cluster } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { BatonError, InvalidArgumentError } from '../../../recipes/errors.js';
import { MultiLock } from '../../../recipes/multilock.js';
import { FairMutex } from '../../../recipes/mutex.js';
import {
  redisClusterFixture,
  type RedisClusterInfo,
  redisFixtureOf,
  withRedisAdmin,
} from '../../harness/backends/redis.js';
import { useScope } from '../../harness/backends/scope.js';
import { expectQueueLength } from '../../harness/internals.js';
import { freePort } from '../../harness/servers/ports.js';
import { listenOnLoopback } from '../../harness/servers/proxy.js';
import { type RedisCluster, type RedisServer, reply, startRedisCluster } from '../../harness/servers/redis.js';
import { eventually, later, track } from '../../harness/wait.js';

/** What Redis Cluster mode does: locks spread over masters, seed lists, refusals, a master's failover. */

/** The base of a lock's keys, as the backend names them (src/backends/redis/keys.ts). */
function baseOf(namespace: string, lock: string): string {
  return `baton:{${namespace}/${lock}}`;
}

/** `host:port` of the master serving the slot of `key`, as the cluster's own slot map says. */
async function masterOf(admin: Cluster, key: string): Promise<string> {
  const slot = Number(await admin.cluster('KEYSLOT', key));
  const range = (await admin.cluster('SLOTS')).find(([first, last]) => first <= slot && slot <= last);
  const [, , master] = range ?? [];
  if (master === undefined) throw new Error(`no master serves slot ${slot}`);
  return `${master[0]}:${master[1]}`;
}

/** A master's own connection in the admin client: a key it does not serve is refused there (MOVED). */
function nodeAt(admin: Cluster, address: string): ReturnType<Cluster['nodes']>[number] {
  const node = admin.nodes('master').find((found) => `${found.options.host}:${found.options.port}` === address);
  if (node === undefined) throw new Error(`no master at ${address}`);
  return node;
}

describe('Redis Cluster: one multi-lock over locks on different masters', () => {
  const scope = useScope(() => redisClusterFixture());
  const info = (): RedisClusterInfo => inject('redisCluster');

  /** Two lock names of this test's namespace whose slots are served by different masters. */
  async function locksOnTwoMasters(): Promise<{ name: string; master: string }[]> {
    return withRedisAdmin(info(), async (admin) => {
      const found: { name: string; master: string }[] = [];
      for (let i = 0; found.length < 2 && i < 200; i += 1) {
        const name = `account-${i}`;
        const master = await masterOf(admin, `${baseOf(scope.namespace, name)}:q`);
        if (found.every((other) => other.master !== master)) found.push({ name, master });
      }
      if (found.length < 2) throw new Error('no two lock names on different masters: is the cluster a single master?');
      return found;
    });
  }

  it("is taken and released; each lock's liveness key of its holder lives on that lock's own master; a second session's multi-lock waits, then gets both with larger tokens", async () => {
    const timeoutMs = info().sessionTimeoutMs;
    const locks = await locksOnTwoMasters();
    const names = locks.map((lock) => lock.name);
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new MultiLock(a, names).acquire({ timeoutMs });
    await withRedisAdmin(info(), async (admin) => {
      for (const { name, master } of locks) {
        // Asked of that master's own connection: a key of another master's slot would be refused (MOVED).
        const node = nodeAt(admin, master);
        expect(await node.exists(`${baseOf(scope.namespace, name)}:s:${a.id}`), `${name} on ${master}`).toBe(1);
        expect(await node.hlen(`${baseOf(scope.namespace, name)}:q`), `${name} on ${master}`).toBe(1);
      }
    });
    const waiting = track(new MultiLock(b, names).acquire({ timeoutMs: timeoutMs * 2 }));
    // The names are taken in sorted order: the second session queues on the first one and waits there.
    const [first, second] = [...names].sort();
    await expectQueueLength(a, first!, 2);
    await expectQueueLength(a, second!, 1);
    expect(waiting.settled).toBe(false);
    await held.release();
    const next = await waiting.promise;
    for (const name of names) expect(next.fencingTokens.get(name)!).toBeGreaterThan(held.fencingTokens.get(name)!);
    await withRedisAdmin(info(), async (admin) => {
      for (const { name, master } of locks)
        expect(
          await nodeAt(admin, master).exists(`${baseOf(scope.namespace, name)}:s:${b.id}`),
          `${name} on ${master}`,
        ).toBe(1);
    });
    await next.release();
  });
});

/** A TCP relay to `address` that keeps everything its clients sent, to show what a client asked of the server. */
class Tap {
  #sent = '';
  readonly #sockets = new Set<net.Socket>();

  private constructor(
    readonly server: net.Server,
    readonly port: number,
  ) {}

  static async to(address: string): Promise<Tap> {
    const colon = address.lastIndexOf(':');
    const target = { host: address.slice(0, colon), port: Number(address.slice(colon + 1)) };
    let tap: Tap | undefined;
    const { server, port } = await listenOnLoopback((client) => tap?.relay(client, target));
    tap = new Tap(server, port);
    return tap;
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Every byte the clients sent, as text (RESP: the commands and their arguments). */
  get sent(): string {
    return this.#sent;
  }

  relay(client: net.Socket, target: { host: string; port: number }): void {
    const upstream = net.connect(target);
    for (const [from, to] of [
      [client, upstream],
      [upstream, client],
    ] as const) {
      this.#sockets.add(from);
      from.on('data', (chunk: Buffer) => {
        if (from === client) this.#sent += chunk.toString('latin1');
        to.write(chunk);
      });
      from.on('error', () => to.destroy());
      from.on('close', () => to.destroy());
    }
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

describe('Redis Cluster: URLs with several hosts, and the refusals', () => {
  const scope = useScope(() => redisClusterFixture());
  const taps: Tap[] = [];
  afterEach(async () => {
    await Promise.all(taps.splice(0).map((tap) => tap.close()));
  });

  async function tapTo(address: string): Promise<Tap> {
    const tap = await Tap.to(address);
    taps.push(tap);
    return tap;
  }

  /** A session key is made by the open's `SET baton:session:<id> ...`: a refused open never sent one. */
  function expectNoSessionKeySent(tap: Tap): void {
    expect(tap.sent, 'the client spoke to the server').toMatch(/\binfo\b/i);
    expect(tap.sent).not.toContain('baton:session:');
  }

  it('a seed list whose first host is down: the session opens through the next one within the connect timeout, and works on every master', async () => {
    const cluster = inject('redisCluster');
    const seed = new URL(cluster.url).host;
    const down = `127.0.0.1:${await freePort()}`; // nobody listens there
    const connectTimeoutMs = cluster.sessionTimeoutMs * 2;
    const startedAt = performance.now();
    const session = await connect(`redis://${down},${seed}?namespace=${scope.namespace}`, {
      sessionTimeoutMs: cluster.sessionTimeoutMs,
      connectTimeoutMs,
    });
    const tookMs = performance.now() - startedAt;
    let closed = false;
    try {
      // The down host is given its share of the connect timeout (half, of two hosts), then the next one answers.
      expect(tookMs).toBeLessThan(connectTimeoutMs);
      const names = Array.from({ length: 12 }, (_, i) => `spread-${i}`);
      const masters = await withRedisAdmin(
        cluster,
        async (admin) =>
          new Set(await Promise.all(names.map((name) => masterOf(admin, `${baseOf(scope.namespace, name)}:q`)))),
      );
      expect(masters.size).toBeGreaterThan(1);
      const all = await new MultiLock(session, names).acquire({ timeoutMs: cluster.sessionTimeoutMs });
      await all.release();
      await session.close();
      closed = true;
      expect(await scope.fixture.liveSessions([session.id]), 'the session left on the server after close()').toEqual(
        [],
      );
    } finally {
      if (!closed) await session.close();
    }
  });

  it('a database other than 0 on a cluster is refused with UNSUPPORTED_SERVER, before any session key is made', async () => {
    const tap = await tapTo(new URL(inject('redisCluster').url).host);
    const refused = await connect(`redis://${tap.address}/1?namespace=${scope.namespace}`, {
      sessionTimeoutMs: 2_000,
      connectTimeoutMs: 4_000,
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(BatonError);
    expect(refused).toMatchObject({ code: 'UNSUPPORTED_SERVER' });
    expect((refused as Error).message).toMatch(/database 0/);
    expectNoSessionKeySent(tap);
  });

  it('two hosts of a server that is not a cluster are refused with INVALID_ARGUMENT, before any session key is made', async () => {
    const standalone = new URL(inject('redisStandalone').url).host;
    const [first, second] = [await tapTo(standalone), await tapTo(standalone)];
    const refused = await connect(`redis://${first.address},${second.address}?namespace=${scope.namespace}`, {
      sessionTimeoutMs: 2_000,
      connectTimeoutMs: 4_000,
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(InvalidArgumentError);
    expect(refused).toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect((refused as Error).message).toMatch(/not in cluster mode/);
    expectNoSessionKeySent(first);
    expect(second.sent).not.toContain('baton:session:');
  });
});

/** A node as `CLUSTER NODES` shows it. */
interface NodeLine {
  readonly id: string;
  readonly address: string;
  readonly master: boolean;
  /** The id of its master, for a replica. */
  readonly masterId: string | undefined;
  /** Flagged `fail` or `fail?` by the node asked. */
  readonly failing: boolean;
  readonly slots: readonly (readonly [number, number])[];
}

async function clusterNodes(port: number): Promise<NodeLine[]> {
  const text = await reply(port, ['CLUSTER', 'NODES']);
  return text
    .split(/\r?\n/)
    .filter(Boolean)
    .map((line) => {
      const [id = '', address = '', flags = '', masterId = '-', , , , , ...slots] = line.split(' ');
      const flagged = flags.split(',');
      return {
        id,
        address: address.split('@')[0]!,
        master: flagged.includes('master'),
        masterId: masterId === '-' ? undefined : masterId,
        failing: flagged.some((flag) => flag.startsWith('fail')),
        slots: slots
          .filter((range) => /^\d/.test(range))
          .map((range) => {
            const [first = '', last = first] = range.split('-');
            return [Number(first), Number(last)] as const;
          }),
      };
    });
}

/** `cluster_state:ok` in `CLUSTER INFO` of the node. */
async function clusterOk(member: RedisServer): Promise<boolean> {
  return /^cluster_state:ok\r?$/m.test(await reply(member.port, ['CLUSTER', 'INFO']).catch(() => ''));
}

describe('Redis Cluster: a master fails over to its replica', () => {
  /** Long enough that a failover (node timeout, the vote, the clients' new slot map) fits well inside it. */
  const SESSION_MS = 8_000;
  /** How soon a silent node is flagged failing: the failover starts about then. */
  const NODE_TIMEOUT_MS = 1_000;
  let cluster: RedisCluster;
  beforeAll(async () => {
    cluster = await startRedisCluster({ masters: 3, replicas: 1, nodeTimeoutMs: NODE_TIMEOUT_MS });
  });
  afterAll(async () => {
    await cluster?.stop();
  });
  const alive = (): RedisServer[] => cluster.members.filter((member) => member.isAlive());
  const info = (): RedisClusterInfo => {
    const nodes = alive().map((member) => member.address);
    return { url: `redis://${nodes[0]}`, nodes, cluster: true, sessionTimeoutMs: SESSION_MS };
  };
  const scope = useScope(() => redisFixtureOf(info(), 'Redis (cluster with replicas)'));

  /** A node killed by a test comes back (as a replica of whoever took its slots): the next test has a replica for each master again. */
  afterEach(async () => {
    const dead = cluster.members.filter((member) => !member.isAlive());
    for (const member of dead) await member.start();
    await eventually(
      'the cluster whole again, every master with a replica whose link is up',
      async () => {
        for (const member of cluster.members) {
          if (!(await clusterOk(member))) return false;
          const nodes = await clusterNodes(member.port);
          if (nodes.length !== cluster.members.length || nodes.some((node) => node.failing)) return false;
          const masters = nodes.filter((node) => node.master && node.slots.length > 0);
          if (!masters.every((master) => nodes.some((node) => node.masterId === master.id))) return false;
        }
        const replication = await Promise.all(
          cluster.members.map((member) => reply(member.port, ['INFO', 'replication'])),
        );
        return replication.every((text) => /^role:master\r?$/m.test(text) || /^master_link_status:up\r?$/m.test(text));
      },
      SESSION_MS * 2,
    );
  }, SESSION_MS * 3);

  const serverAt = (address: string): RedisServer => cluster.members.find((found) => found.address === address)!;

  /** The master serving `key`'s slot and its replica, as the cluster says now. */
  async function masterAndReplica(key: string): Promise<{ master: RedisServer; replica: RedisServer }> {
    const slot = Number(await reply(alive()[0]!.port, ['CLUSTER', 'KEYSLOT', key]));
    const nodes = await clusterNodes(alive()[0]!.port);
    const master = nodes.find(
      (node) => node.master && !node.failing && node.slots.some(([first, last]) => first <= slot && slot <= last),
    )!;
    const replica = nodes.find((node) => node.masterId === master.id && !node.failing)!;
    return { master: serverAt(master.address), replica: serverAt(replica.address) };
  }

  /** The replica has every write its master answered so far (replication is asynchronous). */
  async function caughtUp(master: RedisServer, replica: RedisServer): Promise<void> {
    const offset = (text: string, field: string): number =>
      Number(new RegExp(`^${field}:(\\d+)\\r?$`, 'm').exec(text)?.[1] ?? -1);
    const target = offset(await reply(master.port, ['INFO', 'replication']), 'master_repl_offset');
    await eventually(
      `${replica.address} caught up with ${master.address}`,
      async () => offset(await reply(replica.port, ['INFO', 'replication']), 'slave_repl_offset') >= target,
      SESSION_MS / 4,
    );
  }

  /** Waits until `replica` is a master and every other survivor serves the whole slot space again; the time it took since `since`. */
  async function promoted(replica: RedisServer, since: number): Promise<number> {
    await eventually(
      `${replica.address} promoted, and the cluster ok on every survivor`,
      async () => {
        if (!/^role:master\r?$/m.test(await reply(replica.port, ['INFO', 'replication']).catch(() => ''))) return false;
        for (const survivor of alive()) {
          if (!(await clusterOk(survivor))) return false;
          const self = (await clusterNodes(survivor.port)).find((node) => node.address === replica.address);
          if (self?.master !== true || self.slots.length === 0) return false;
        }
        return true;
      },
      SESSION_MS,
    );
    return performance.now() - since;
  }

  /** The nodes on which a connection in subscribe mode holds at least one channel (`CLIENT LIST TYPE pubsub`). */
  async function subscribedOn(): Promise<RedisServer[]> {
    const found: RedisServer[] = [];
    for (const node of alive()) {
      const clients = await reply(node.port, ['CLIENT', 'LIST', 'TYPE', 'pubsub']).catch(() => '');
      if (/\bsub=[1-9]/.test(clients)) found.push(node);
    }
    return found;
  }

  /** When the key expires (ms since the epoch; the servers run on this machine, on its clock), asked of the node serving it. */
  async function expiresAt(node: RedisServer, key: string): Promise<number> {
    const ttl = Number(await reply(node.port, ['PTTL', key]));
    return ttl < 0 ? ttl : Date.now() + ttl;
  }

  function watchStates(session: Session): string[] {
    const states: string[] = [];
    session.on('state', (state) => states.push(state));
    return states;
  }

  it(
    "the holder's master is killed: its replica is promoted, the holder's session lives through it, and on release the waiter is granted with a larger token",
    async () => {
      const lock = 'ledger';
      const base = baseOf(scope.namespace, lock);
      const { master, replica } = await masterAndReplica(`${base}:q`);
      const [holder, waiter] = [await scope.open(), await scope.open()];
      const [holderStates, waiterStates] = [watchStates(holder), watchStates(waiter)];
      const held = await new FairMutex(holder, lock).acquire();
      const waiting = track(new FairMutex(waiter, lock).acquire({ timeoutMs: SESSION_MS * 3 }));
      await expectQueueLength(holder, lock, 2);
      // The premise: the replica has both entries and both liveness keys (no write lost in the failover).
      await caughtUp(master, replica);
      const killedAt = Date.now();
      const killedAtPerf = performance.now();
      await master.kill('SIGKILL');
      const failoverMs = await promoted(replica, killedAtPerf);
      // The holder's renewals waited and were sent again to the promoted replica: its key in the lock now
      // expires later than any setting made before the kill could have made it.
      await eventually(
        "the holder's liveness key renewed on the promoted replica",
        async () => (await expiresAt(replica, `${base}:s:${holder.id}`)) > killedAt + SESSION_MS,
        SESSION_MS / 2,
      );
      const renewedMs = performance.now() - killedAtPerf;
      expect(
        held.signal.aborted,
        `failover ${Math.round(failoverMs)} ms, renewed ${Math.round(renewedMs)} ms after the kill`,
      ).toBe(false);
      expect(held.held).toBe(true);
      // The server has the renewal before the client has read its reply, which is what reconnects it.
      await eventually('the holder connected again', async () => holder.state === 'connected', SESSION_MS / 2);
      // The waiter's renewals waited too; it counts as connected once one of them is answered.
      await eventually('the waiter connected again', async () => waiter.state === 'connected', SESSION_MS / 2);
      expect(held.signal.aborted).toBe(false);
      expect(waiting.settled).toBe(false);
      const { notifications, backstopWakes } = redisCounters;
      const releasedAt = performance.now();
      await held.release();
      const granted = await waiting.promise;
      const grantedMs = performance.now() - releasedAt;
      const woken = {
        notifications: redisCounters.notifications - notifications,
        backstopWakes: redisCounters.backstopWakes - backstopWakes,
      };
      console.info(
        `failover: promoted ${Math.round(failoverMs)} ms after the kill, holder renewed ${Math.round(renewedMs)} ms after it; states holder ${JSON.stringify(holderStates)} waiter ${JSON.stringify(waiterStates)}; granted ${Math.round(grantedMs)} ms after the release, woken by ${JSON.stringify(woken)}`,
      );
      expect(woken.notifications + woken.backstopWakes).toBe(1);
      // At worst the backstop, which looks every quarter of the timeout.
      expect(grantedMs).toBeLessThan(SESSION_MS / 4 + 1_000);
      expect(granted.fencingToken).toBeGreaterThan(held.fencingToken);
      expect(holder.state).toBe('connected');
      expect(waiter.state).toBe('connected');
      await granted.release();
    },
    SESSION_MS * 5,
  );

  it(
    "the node of the waiter's subscriber connection is killed: the waiter subscribes again on another node, and the release wakes it by notification",
    async () => {
      const [holder, waiter] = [await scope.open(), await scope.open()];
      const [holderStates, waiterStates] = [watchStates(holder), watchStates(waiter)];
      // A first wait shows which node the waiter's subscriber is on (the only connection in this cluster holding a channel).
      const scout = await new FairMutex(holder, 'scout').acquire();
      const giveUp = new AbortController();
      const scouting = later(new FairMutex(waiter, 'scout').acquire({ signal: giveUp.signal }));
      let nodes: RedisServer[] = [];
      await eventually(
        "the waiter's subscription",
        async () => (nodes = await subscribedOn()).length > 0,
        SESSION_MS / 2,
      );
      expect(nodes).toHaveLength(1);
      const doomed = nodes[0]!;
      giveUp.abort(new Error('scouted'));
      await expect(scouting).rejects.toThrow('scouted');
      await scout.release();
      // The lock of the test lives on a master other than that node (a replica's death leaves its master's slots alone).
      const doomedLine = (await clusterNodes(doomed.port)).find((node) => node.address === doomed.address)!;
      let lock = '';
      for (let i = 0; lock === '' && i < 200; i += 1) {
        const { master } = await masterAndReplica(`${baseOf(scope.namespace, `job-${i}`)}:q`);
        if (master !== doomed) lock = `job-${i}`;
      }
      const held = await new FairMutex(holder, lock).acquire();
      const waiting = track(new FairMutex(waiter, lock).acquire({ timeoutMs: SESSION_MS * 3 }));
      await expectQueueLength(holder, lock, 2);
      await eventually(
        "the waiter's subscription, on the same node",
        async () => (nodes = await subscribedOn()).length > 0,
        SESSION_MS / 2,
      );
      expect(nodes).toEqual([doomed]);
      const replica = doomedLine.master
        ? (await clusterNodes(doomed.port)).find((node) => node.masterId === doomedLine.id)
        : undefined;
      const killedAt = performance.now();
      await doomed.kill('SIGKILL');
      await eventually(
        'the waiter subscribed on another node',
        async () => {
          nodes = await subscribedOn();
          return nodes.length === 1 && nodes[0] !== doomed;
        },
        SESSION_MS,
      );
      const next = nodes[0]!;
      const movedMs = performance.now() - killedAt;
      // A killed master is failed over first (its slots hold the sessions' keys too).
      const failoverMs = replica === undefined ? undefined : await promoted(serverAt(replica.address), killedAt);
      expect(waiting.settled).toBe(false);
      const { notifications, backstopWakes } = redisCounters;
      await held.release();
      const granted = await waiting.promise;
      const woken = {
        notifications: redisCounters.notifications - notifications,
        backstopWakes: redisCounters.backstopWakes - backstopWakes,
      };
      console.info(
        `subscriber: its node ${doomed.address} (${doomedLine.master ? 'a master' : 'a replica'}) killed; subscribed again on ${next.address} ${Math.round(movedMs)} ms later${failoverMs === undefined ? '' : `, failover ${Math.round(failoverMs)} ms`}; states holder ${JSON.stringify(holderStates)} waiter ${JSON.stringify(waiterStates)}; woken by ${JSON.stringify(woken)}`,
      );
      expect(woken).toEqual({ notifications: 1, backstopWakes: 0 });
      expect(granted.fencingToken).toBeGreaterThan(held.fencingToken);
      expect(waiter.state).toBe('connected');
      expect(held.signal.aborted).toBe(false);
      await granted.release();
    },
    SESSION_MS * 5,
  );
});

describe('Redis Cluster: connecting while a master is down', () => {
  let cluster: RedisCluster | undefined;
  beforeAll(async () => {
    // Without full coverage, the masters that are up serve their slots while one is down.
    cluster = await startRedisCluster({ masters: 3, args: ['--cluster-require-full-coverage', 'no'] });
  });
  afterAll(async () => {
    await cluster?.stop();
  });

  it("opens every session on the masters that answer (a session key whose slot is down is made under another id; the down master's eviction policy cannot be read and is passed over)", async () => {
    const [down, ...up] = cluster!.masters;
    await down!.kill('SIGKILL');
    const url = `redis://${up.map((member) => member.address).join(',')}?namespace=master-down`;
    await eventually(
      'the masters that are up see the other down',
      async () => {
        const nodes = await reply(up[0]!.port, ['CLUSTER', 'NODES']);
        return nodes.split(/\r?\n/).some((line) => line.includes(`:${down!.port}@`) && /\bfail\b/.test(line));
      },
      10_000,
    );
    const sessions: Session[] = [];
    try {
      // Each session key lands on the down master's slots with one chance in three.
      for (let i = 0; i < 6; i += 1)
        sessions.push(await connect(url, { sessionTimeoutMs: 2_000, connectTimeoutMs: 8_000 }));
      for (const session of sessions) expect(session.state).toBe('connected');
    } finally {
      await Promise.all(sessions.map((session) => session.close()));
    }
  });
});

import { connect, redisCounters, redisProbeOf } from 'baton-locks/testing';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { LockLostError, SessionLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { type RedisServer, startRedis } from '../../harness/servers/redis.js';
import { eventually, later } from '../../harness/wait.js';

/** Short: expiry, loss and restart tests take a few seconds; every wait below is derived from it. */
const TIMEOUT_MS = 2_000;
/** The session's default margin: the deadline is this long before the server could expire the key. */
const MARGIN_MS = TIMEOUT_MS / 8;

/** What each test started, stopped after it by PID (servers) or closed (proxies, sessions, clients). */
const started: { servers: RedisServer[]; proxies: TcpProxy[]; sessions: Session[]; clients: Redis[] } = {
  servers: [],
  proxies: [],
  sessions: [],
  clients: [],
};

afterEach(async () => {
  await Promise.allSettled(started.sessions.splice(0).map((session) => session.close()));
  for (const client of started.clients.splice(0)) client.disconnect();
  await Promise.allSettled(started.proxies.splice(0).map((proxy) => proxy.close()));
  await Promise.allSettled(started.servers.splice(0).map((server) => server.stop()));
});

async function server(options: Parameters<typeof startRedis>[0] = {}): Promise<RedisServer> {
  const made = await startRedis(options);
  started.servers.push(made);
  return made;
}

async function proxyTo(target: RedisServer): Promise<TcpProxy> {
  const proxy = await TcpProxy.start({ port: target.port });
  started.proxies.push(proxy);
  return proxy;
}

async function open(address: string, namespace = 'faults'): Promise<{ session: Session; states: string[] }> {
  const session = await connect(`redis://${address}?namespace=${namespace}`, { sessionTimeoutMs: TIMEOUT_MS });
  started.sessions.push(session);
  const states: string[] = [];
  session.on('state', (state) => states.push(state));
  return { session, states };
}

function admin(target: RedisServer): Redis {
  const client = new Redis({ host: '127.0.0.1', port: target.port, maxRetriesPerRequest: 1 });
  client.on('error', () => undefined);
  started.clients.push(client);
  return client;
}

describe('Redis faults: the connection cut', () => {
  it('a cut shorter than the session timeout: suspended, then connected; the hold survives with its token', async () => {
    const redis = await server();
    const proxy = await proxyTo(redis);
    const { session, states } = await open(proxy.address);
    const lock = await new FairMutex(session, 'short').acquire();
    proxy.refuse();
    proxy.drop();
    await eventually('suspended', () => session.state === 'suspended', TIMEOUT_MS);
    proxy.restore();
    await eventually('connected again', () => session.state === 'connected', TIMEOUT_MS);
    expect(states).toEqual(['suspended', 'connected']);
    expect(lock.signal.aborted).toBe(false);
    const { session: other } = await open(redis.address);
    // The hold is still the server's truth: another session waits for it.
    expect(await new FairMutex(other, 'short').tryAcquire()).toBeNull();
    await lock.release();
    const next = await new FairMutex(other, 'short').acquire({ timeoutMs: TIMEOUT_MS });
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    await next.release();
  });

  it('a silent connection shorter than the timeout (a partition that heals) is survived too', async () => {
    const redis = await server();
    const proxy = await proxyTo(redis);
    const { session } = await open(proxy.address);
    const lock = await new FairMutex(session, 'silent').acquire();
    proxy.blackhole();
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS / 2));
    proxy.restore();
    await eventually('connected', () => session.state === 'connected', TIMEOUT_MS);
    expect(lock.signal.aborted).toBe(false);
    await lock.release();
  });

  it('a cut longer than the timeout: the holder is told before the server lets the key expire, and the session never comes back', async () => {
    const redis = await server();
    const proxy = await proxyTo(redis);
    const { session, states } = await open(proxy.address);
    const key = redisProbeOf(session).view.sessionKey;
    const lock = await new FairMutex(session, 'long').acquire();
    const direct = admin(redis);
    await direct.ping();
    // The key's time to live, asked the moment the holder is told.
    let leftAtAbort: Promise<number> | undefined;
    lock.signal.addEventListener(
      'abort',
      () => {
        leftAtAbort = direct.pttl(key);
      },
      { once: true },
    );
    proxy.blackhole();
    const cutAt = performance.now();
    await eventually('the holder told', () => leftAtAbort !== undefined, TIMEOUT_MS * 2);
    const toldAfter = performance.now() - cutAt;
    // Told while the server still keeps the key: nobody else can have been granted the lock yet.
    const left = await leftAtAbort!;
    expect(left, `told ${Math.round(toldAfter)} ms after the cut`).toBeGreaterThan(0);
    expect(toldAfter).toBeLessThan(TIMEOUT_MS);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect(session.state).toBe('lost');
    await eventually('the key expired on the server', async () => (await direct.exists(key)) === 0, TIMEOUT_MS * 2);
    // The held renewals reach the server now, late: PEXPIRE creates nothing.
    proxy.restore();
    await new Promise((resolve) => setTimeout(resolve, MARGIN_MS));
    expect(await direct.exists(key)).toBe(0);
    expect(states).toEqual(['suspended', 'lost']);
    // Another session is granted at once: the lost session's entry is dropped by its enqueue.
    const { session: other } = await open(redis.address);
    const next = await new FairMutex(other, 'long').acquire({ timeoutMs: TIMEOUT_MS });
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    await next.release();
  });
});

describe('Redis faults: a silent subscriber connection', () => {
  it('is pinged with each renewal and dialled again when it stays silent: the next release wakes its waiter by notification, and the session is never suspended', async () => {
    const redis = await server();
    const proxy = await proxyTo(redis);
    const { session: holder } = await open(redis.address, 'silent-sub');
    const { session: waiter, states } = await open(proxy.address, 'silent-sub');
    const direct = admin(redis);
    const first = await new FairMutex(holder, 'l').acquire();
    const waiting = later(new FairMutex(waiter, 'l').acquire({ timeoutMs: TIMEOUT_MS * 5 }));
    // The waiter's subscriber is the one connection of the proxy in subscribe mode.
    let port = 0;
    await eventually('the waiter subscribed', async () => {
      const line = String(await direct.call('CLIENT', 'LIST', 'TYPE', 'pubsub'))
        .split('\n')
        .find((entry) => /sub=1/.test(entry));
      port = Number(/ addr=127\.0\.0\.1:(\d+)/.exec(line ?? '')?.[1] ?? 0);
      return port > 0;
    });
    // An idle connection a NAT forgot: nothing passes on it any more, nobody closes it.
    expect(proxy.isolateServerPort(port)).toBe(true);
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS));
    const { notifications, backstopWakes } = redisCounters;
    await first.release();
    const granted = await waiting;
    expect(redisCounters.notifications - notifications).toBe(1);
    expect(redisCounters.backstopWakes - backstopWakes).toBe(0);
    expect(states).toEqual([]);
    await granted.release();
  });
});

describe('Redis faults: the recovery from a silent connection', () => {
  it('the renewal in flight at the cut does not make the fresh connection look silent: one redial, one suspended/connected', async () => {
    const redis = await server();
    const proxy = await proxyTo(redis);
    const { session, states } = await open(proxy.address, 'one-redial');
    const direct = admin(redis);
    const lock = await new FairMutex(session, 'l').acquire();
    const before = Number(/total_connections_received:(\d+)/.exec(await direct.info('stats'))?.[1]);
    proxy.blackhole();
    // The renewal sent after the cut is held; the watchdog finds the connection silent and drops it.
    await eventually('suspended', () => session.state === 'suspended', TIMEOUT_MS);
    proxy.restore();
    await eventually('connected', () => session.state === 'connected', TIMEOUT_MS);
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS / 2));
    const after = Number(/total_connections_received:(\d+)/.exec(await direct.info('stats'))?.[1]);
    expect(states).toEqual(['suspended', 'connected']);
    // The client and the subscriber dialled once each; the admin's INFO is not a new connection.
    expect(after - before).toBe(2);
    expect(lock.signal.aborted).toBe(false);
    await lock.release();
  });
});

describe('Redis faults: a lost reply', () => {
  it('an enqueue whose reply was lost while the acquire gave up: sent again, it finds its entry, which is withdrawn; the queue goes on', async () => {
    const redis = await server();
    const proxy = await proxyTo(redis);
    const { session } = await open(proxy.address, 'lost-reply');
    const { session: other } = await open(redis.address, 'lost-reply');
    const direct = admin(redis);
    const adopted = redisCounters.adopted;
    // The enqueue reaches the server, its reply never comes back, and the connection stays down a while.
    proxy.refuse();
    const cut = proxy.dropAfterNextRequest(
      (chunk) => /eval/i.test(chunk.toString()) && chunk.toString().includes('{lost-reply/gone}:q'),
    );
    const giveUp = new AbortController();
    const gaveUp = new FairMutex(session, 'gone').acquire({ signal: giveUp.signal }).catch((error: unknown) => error);
    await cut;
    expect(await direct.hlen('baton:{lost-reply/gone}:q')).toBe(1); // written, its answer lost
    giveUp.abort(new Error('given up'));
    await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS / 4));
    proxy.restore();
    // The enqueue is never abandoned half way: the acquire settles once its reply came, and gives up then.
    expect(await gaveUp).toMatchObject({ message: 'given up' });
    // Sent again after the reconnect, the enqueue finds its entry; the recipe then withdraws it.
    await eventually(
      'the entry withdrawn',
      async () => (await direct.hlen('baton:{lost-reply/gone}:q')) === 0,
      TIMEOUT_MS,
    );
    expect(redisCounters.adopted - adopted).toBe(1);
    expect(session.state).toBe('connected');
    const next = await new FairMutex(other, 'gone').acquire({ timeoutMs: TIMEOUT_MS });
    await next.release();
    const again = await new FairMutex(session, 'gone').acquire({ timeoutMs: TIMEOUT_MS });
    await again.release();
  });
});

describe('Redis faults: a full server', () => {
  it('at its maxmemory under noeviction: renewals go on, a hold survives and is released; a new acquisition is refused (OOM)', async () => {
    const redis = await server({ args: ['--maxmemory-policy', 'noeviction'] });
    const { session, states } = await open(redis.address, 'full');
    const { session: other } = await open(redis.address, 'full');
    const lock = await new FairMutex(session, 'held').acquire();
    const direct = admin(redis);
    // Full: maxmemory below what the server already uses; nothing can be evicted.
    // (Small values: a large one's query buffer would be freed later, and the server no longer full.)
    const ballast = direct.pipeline();
    for (let i = 0; i < 64; i += 1) ballast.set(`ballast-${i}`, 'x'.repeat(64 * 1024));
    await ballast.exec();
    const used = Number(/^used_memory:(\d+)/m.exec(await direct.info('memory'))?.[1]);
    await direct.config('SET', 'maxmemory', String(used - 1024 * 1024));
    await expect(direct.set('probe', '1')).rejects.toThrow(/OOM/);
    try {
      // Twice the timeout: every renewal must have gone through.
      await new Promise((resolve) => setTimeout(resolve, TIMEOUT_MS * 2));
      expect(session.state).toBe('connected');
      expect(states).toEqual([]);
      expect(lock.signal.aborted).toBe(false);
      await expect(direct.set('probe', '1')).rejects.toThrow(/OOM/); // still full
      const refused = await new FairMutex(other, 'other')
        .acquire({ timeoutMs: TIMEOUT_MS })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(Error);
      expect(String((refused as Error).cause ?? refused)).toMatch(/OOM/);
      await lock.release();
      expect(await direct.hlen('baton:{full/held}:q')).toBe(0);
    } finally {
      await direct.config('SET', 'maxmemory', '0');
    }
  });
});

describe('Redis faults: the open', () => {
  it('the reply to the SET NX that makes the session key is lost: sent again, it finds the key it made, and the open succeeds', async () => {
    const redis = await server();
    const proxy = await proxyTo(redis);
    const cut = proxy.dropAfterNextRequest(
      (chunk) => /baton:session:/.test(chunk.toString()) && /\bNX\b/i.test(chunk.toString()),
    );
    const opening = open(proxy.address, 'open-lost');
    await cut;
    const { session } = await opening;
    expect(session.state).toBe('connected');
    const lock = await new FairMutex(session, 'l').acquire();
    await lock.release();
  });
});

describe('Redis faults: the server restarted', () => {
  it('without persistence: every session and queue is gone; holders are told, tokens still grow (the counter is seeded from the clock)', async () => {
    const redis = await server();
    const { session } = await open(redis.address);
    const lock = await new FairMutex(session, 'wiped').acquire();
    await redis.kill('SIGKILL');
    await redis.start();
    await eventually('the holder told', () => lock.signal.aborted, TIMEOUT_MS * 2);
    expect(session.state).toBe('lost');
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect((lock.signal.reason as Error).cause).toBeInstanceOf(SessionLostError);
    const { session: next } = await open(redis.address);
    const after = await new FairMutex(next, 'wiped').acquire();
    expect(after.fencingToken).toBeGreaterThan(lock.fencingToken);
    await after.release();
  });

  it('with appendfsync always, a restart within the timeout: sessions, holds and the counter survive', async () => {
    const redis = await server({ persistence: true });
    const { session, states } = await open(redis.address);
    const { session: waiter } = await open(redis.address);
    const lock = await new FairMutex(session, 'kept').acquire();
    const waiting = later(new FairMutex(waiter, 'kept').acquire({ timeoutMs: TIMEOUT_MS * 3 }));
    await new Promise((resolve) => setTimeout(resolve, 50)); // the waiter's enqueue is written
    await redis.kill('SIGKILL');
    await redis.start();
    await eventually(
      'connected again',
      () => session.state === 'connected' && states.includes('suspended'),
      TIMEOUT_MS,
    );
    expect(lock.signal.aborted).toBe(false);
    expect(waiter.state).not.toBe('lost');
    // The scripts were forgotten with the restart: ioredis sends them again (NOSCRIPT, then EVAL).
    await lock.release();
    const next = await waiting;
    expect(next.fencingToken).toBeGreaterThan(lock.fencingToken);
    await next.release();
  });
});

describe('Redis faults: a failover to a replica that missed a write', () => {
  it('the promoted replica grants the lock again while the lost holder still believes it holds; the fencing token still grows', async () => {
    const primary = await server();
    const link = await proxyTo(primary); // the replica reaches its primary through it
    const replica = await server({ replicaOf: link.address });
    const replicaAdmin = admin(replica);
    const primaryAdmin = admin(primary);
    await eventually(
      'the replica in sync',
      async () => /master_link_status:up/.test(await replicaAdmin.info('replication')),
      10_000,
    );
    const toA = await proxyTo(primary);
    const toB = await proxyTo(primary);
    const { session: a } = await open(toA.address, 'failover');
    const { session: b } = await open(toB.address, 'failover');

    // A's cycle reaches the replica (WAIT says so).
    const first = await new FairMutex(a, 'fenced').acquire();
    await first.release();
    expect(await primaryAdmin.wait(1, 1_000)).toBe(1);

    // The replication link breaks; B's acquisition is written on the primary only.
    link.refuse();
    link.drop();
    await eventually(
      'the replica cut off',
      async () => /master_link_status:down/.test(await replicaAdmin.info('replication')),
      5_000,
    );
    const held = await new FairMutex(b, 'fenced').acquire();
    expect(held.fencingToken).toBeGreaterThan(first.fencingToken);
    expect(await primaryAdmin.wait(1, 100)).toBe(0); // not on the replica

    // The replica is promoted; B is cut off from everything for now (its client had no way to know).
    toB.refuse();
    toB.drop();
    await replicaAdmin.replicaof('NO', 'ONE');
    toA.retarget({ port: replica.port });
    // The new primary's counter is behind: it never saw B's token (it has A's, or, when it took a fresh
    // copy of the primary before the cut, possibly none).
    expect(BigInt((await replicaAdmin.get('baton:{failover/fenced}:c')) ?? '0')).toBeLessThan(held.fencingToken);
    const c = (await open(replica.address, 'failover')).session;
    const taken = await new FairMutex(c, 'fenced').acquire({ timeoutMs: TIMEOUT_MS });

    // Two holders at once: exclusion does not survive the failover. The replica's counter is behind
    // (it never saw B's token), but a token is never below the server's clock in microseconds: C's is
    // above B's, so a resource that refuses a token lower than the highest it has seen refuses B's
    // writes once it has seen C's.
    expect(held.signal.aborted).toBe(false);
    expect(await replicaAdmin.get('baton:{failover/fenced}:c')).toBe(String(taken.fencingToken));
    expect(taken.fencingToken).toBeGreaterThan(held.fencingToken);
    // B learns it at its deadline (still cut off) or at its confirm after reconnecting to the new primary.
    toB.retarget({ port: replica.port });
    toB.restore();
    await eventually('B told', () => held.signal.aborted, TIMEOUT_MS * 2);
    expect(held.signal.reason).toBeInstanceOf(LockLostError);
    await taken.release();
  }, 30_000);

  it('a release the promoted replica never received is sent again after the reconnect: the queue is not left blocked by a live session', async () => {
    const primary = await server();
    const link = await proxyTo(primary);
    const replica = await server({ replicaOf: link.address });
    const replicaAdmin = admin(replica);
    const primaryAdmin = admin(primary);
    await eventually(
      'the replica in sync',
      async () => /master_link_status:up/.test(await replicaAdmin.info('replication')),
      10_000,
    );
    const toA = await proxyTo(primary);
    const { session: a } = await open(toA.address, 'failover');
    const held = await new FairMutex(a, 'released').acquire();
    expect(await primaryAdmin.wait(1, 1_000)).toBe(1);
    link.refuse();
    link.drop();
    await eventually(
      'the replica cut off',
      async () => /master_link_status:down/.test(await replicaAdmin.info('replication')),
      5_000,
    );
    await held.release(); // answered by the primary, never replicated
    await replicaAdmin.replicaof('NO', 'ONE');
    toA.retarget({ port: replica.port });
    await eventually('a back on the new primary', () => a.state === 'connected', TIMEOUT_MS * 2);
    // Without the release sent again, a's entry would head the queue for as long as a lives.
    const { session: c } = await open(replica.address, 'failover');
    const next = await new FairMutex(c, 'released').acquire({ timeoutMs: TIMEOUT_MS });
    expect(next.fencingToken).toBeGreaterThan(held.fencingToken);
    await next.release();
  }, 30_000);
});

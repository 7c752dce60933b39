import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { inspect } from 'node:util';

import { connect, redisCounters, redisProbeOf, redisWatches } from 'baton-locks/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import {
  AccessDeniedError,
  BackendError,
  BatonError,
  InvalidArgumentError,
  SessionLostError,
} from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { SCRIPTS } from '../../../src/backends/redis/scripts.js';
import type { RedisTarget } from '../../../src/backends/redis/url.js';
import { parseUrl } from '../../../src/url.js';
import { redisFixture, withRedisAdmin } from '../../harness/backends/redis.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { type RedisServer, startRedis } from '../../harness/servers/redis.js';
import { eventually, later, track } from '../../harness/wait.js';

const SECRET = 'pw-Zq81-never-shown';

describe('Redis URLs', () => {
  it('accepts user, password, database and namespace, and never shows the password', () => {
    const parsed = parseUrl(`redis://ops:${SECRET}@127.0.0.1:6380/3?namespace=app/jobs`);
    expect(parsed).toMatchObject({ scheme: 'redis', hosts: ['127.0.0.1:6380'], namespace: 'app/jobs' });
    expect(parsed.target).toMatchObject({ db: 3, tls: false, username: 'ops' });
    expect((parsed.target as RedisTarget).password()).toBe(SECRET);
    expect(inspect(parsed, { depth: 10, showHidden: true })).not.toContain(SECRET);
    expect(JSON.stringify(parsed)).not.toContain(SECRET);
    expect(parseUrl(`rediss://:${encodeURIComponent('p@ss:w/rd')}@[::1]:6379`).target).toMatchObject({
      db: 0,
      tls: true,
      username: undefined,
    });
    expect(parseUrl('redis://127.0.0.1:6379').namespace).toBe('baton');
  });

  it('refuses a bad URL without echoing the password', () => {
    for (const url of [
      `redis://ops:${SECRET}@127.0.0.1/0`,
      `redis://ops:${SECRET}@127.0.0.1:6379/db`,
      `redis://ops:${SECRET}@127.0.0.1:6379?ns=x`,
      `redis://ops:${SECRET}@127.0.0.1:6379?namespace=a//b`,
    ]) {
      let error: unknown;
      try {
        parseUrl(url);
      } catch (caught) {
        error = caught;
      }
      expect(error, url).toBeInstanceOf(InvalidArgumentError);
      expect(inspect(error, { depth: 10 })).not.toContain(SECRET);
    }
  });

  it('refuses the redis option where it would be ignored', async () => {
    await expect(connect('etcd://127.0.0.1:2379/x', { redis: { password: SECRET } })).rejects.toThrow(
      InvalidArgumentError,
    );
    await expect(connect('redis://127.0.0.1:6379?namespace=x', { redis: { tls: {} } })).rejects.toThrow(/rediss/);
    await expect(
      connect('redis://127.0.0.1:6379?namespace=x', { redis: { passwort: SECRET } as never }),
    ).rejects.toThrow(/password/);
  });
});

describe('Redis URLs: a password holding ? / # or @ unencoded', () => {
  // Each half of the password is a marker that must never be shown.
  const passwords = ['lft-Q7x?rgt-K9z', 'lft-Q7x/rgt-K9z', 'lft-Q7x#rgt-K9z', 'lft-Q7x@rgt-K9z', 'lft-Q7x?/#@rgt-K9z'];

  it('splits the credentials at the last @: host, port and password come out right', () => {
    for (const password of passwords) {
      const parsed = parseUrl(`redis://u:${password}@127.0.0.1:6379/2?namespace=app`);
      expect(parsed, password).toMatchObject({ hosts: ['127.0.0.1:6379'], namespace: 'app' });
      expect(parsed.target, password).toMatchObject({ db: 2, username: 'u' });
      expect((parsed.target as RedisTarget).password(), password).toBe(password);
    }
  });

  it('a bad URL with such a password is refused without showing the password or naming a host made of it', () => {
    for (const password of passwords) {
      for (const url of [
        `redis://u:${password}@h`,
        `redis://u:${password}@h:1/x`,
        `redis://u:${password}@h:99999`,
        `redis://u:${password}@h:1?ns=1`,
        `redis://u:${password}@`,
      ]) {
        let error: unknown;
        try {
          parseUrl(url);
        } catch (caught) {
          error = caught;
        }
        expect(error, url).toBeInstanceOf(InvalidArgumentError);
        const shown = `${inspect(error, { depth: 10 })} ${(error as Error).message}`;
        for (const half of ['lft-Q7x', 'rgt-K9z']) expect(shown, url).not.toContain(half);
        expect(shown, url).not.toMatch(/host "/);
      }
    }
  });
});

describe('Redis without ioredis installed', () => {
  it('connect rejects with MISSING_DEPENDENCY, saying to install ioredis', () => {
    // A separate Node in which ioredis cannot be resolved, as in a project that never installed it.
    const script =
      "import('./src/connect.ts').then((m) => m.connect('redis://127.0.0.1:1?namespace=x')).then(() => console.log('connected'), (e) => console.log(JSON.stringify({ code: e.code, message: e.message, cause: e.cause?.code })))";
    const run = spawnSync(
      process.execPath,
      ['--import', 'tsx', '--import', './test/harness/workers/hide-ioredis.mjs', '--input-type=module', '-e', script],
      {
        cwd: fileURLToPath(new URL('../../..', import.meta.url)),
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(run.status, run.stderr).toBe(0);
    const outcome = JSON.parse(run.stdout) as { code: string; message: string; cause: string };
    expect(outcome.message).toContain('npm install ioredis');
    expect(outcome).toMatchObject({ code: 'MISSING_DEPENDENCY', cause: 'ERR_MODULE_NOT_FOUND' });
  });
});

describe('Redis: a server with a password', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis({ args: ['--requirepass', SECRET] });
  });
  afterAll(async () => server?.stop());

  it('opens a session with the password from the URL or the options, and refuses a wrong one without showing it', async () => {
    const session = await connect(`redis://:${SECRET}@${server.address}/1?namespace=auth`, { sessionTimeoutMs: 2_000 });
    expect(inspect(session, { depth: 10, showHidden: true })).not.toContain(SECRET);
    expect(inspect(backendOf(session), { depth: 10, showHidden: true })).not.toContain(SECRET);
    const lock = await new FairMutex(session, 'x').acquire();
    expect(lock.fencingToken).toBeGreaterThan(0n);
    await lock.release();
    await session.close();
    const other = await connect(`redis://${server.address}?namespace=auth`, {
      sessionTimeoutMs: 2_000,
      redis: { password: SECRET },
    });
    await other.close();

    const wrong = 'wrong-pw-Kx3';
    const refused = await connect(`redis://:${wrong}@${server.address}?namespace=auth`, {
      sessionTimeoutMs: 2_000,
      connectTimeoutMs: 3_000,
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AccessDeniedError);
    expect(inspect(refused, { depth: 10 })).not.toContain(wrong);
    const none = await connect(`redis://${server.address}?namespace=auth`, {
      sessionTimeoutMs: 2_000,
      connectTimeoutMs: 3_000,
    }).catch((error: unknown) => error);
    expect(none).toBeInstanceOf(AccessDeniedError);
  });
});

describe('Redis: servers refused at open', () => {
  const servers: RedisServer[] = [];
  afterAll(async () => {
    await Promise.allSettled(servers.map((server) => server.stop()));
  });
  async function serverWith(args: string[]): Promise<RedisServer> {
    const server = await startRedis({ args });
    servers.push(server);
    return server;
  }
  const open = (server: RedisServer) =>
    connect(`redis://${server.address}?namespace=config`, { sessionTimeoutMs: 2_000, connectTimeoutMs: 5_000 });

  it('refuses a server that may evict keys (maxmemory with a policy other than noeviction), naming the policy', async () => {
    for (const policy of ['volatile-lru', 'volatile-ttl', 'allkeys-lru', 'allkeys-random']) {
      const server = await serverWith(['--maxmemory', '64mb', '--maxmemory-policy', policy]);
      const refused = await open(server).catch((error: unknown) => error);
      expect(refused, policy).toBeInstanceOf(BatonError);
      expect(refused, policy).toMatchObject({ code: 'UNSAFE_SERVER_CONFIG' });
      expect((refused as Error).message, policy).toContain(policy);
      await withRedisAdmin({ url: `redis://${server.address}`, sessionTimeoutMs: 2_000 }, async (client) =>
        expect(await client.keys('baton:*')).toEqual([]),
      );
      await server.stop();
    }
  });

  it('opens on noeviction with maxmemory, and on any policy without maxmemory', async () => {
    for (const args of [
      ['--maxmemory', '64mb', '--maxmemory-policy', 'noeviction'],
      ['--maxmemory', '0', '--maxmemory-policy', 'allkeys-lru'],
    ]) {
      const server = await serverWith(args);
      const session = await open(server);
      const lock = await new FairMutex(session, 'x').acquire();
      await lock.release();
      await session.close();
      await server.stop();
    }
  });

  it('opens on a server in cluster mode (a one-node cluster) through the cluster client, and refuses a database other than 0 there', async () => {
    // A node that never met another does not know its address, and ioredis skips a node listed without one.
    const server = await serverWith(['--cluster-enabled', 'yes', '--cluster-announce-ip', '127.0.0.1']);
    await withRedisAdmin({ url: `redis://${server.address}`, sessionTimeoutMs: 2_000 }, async (client) => {
      await client.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383');
      await eventually(
        'the one-node cluster serves every slot',
        async () => /cluster_state:ok/.test(String(await client.call('CLUSTER', 'INFO'))),
        10_000,
      );
    });
    const session = await open(server);
    const lock = await new FairMutex(session, 'x').acquire();
    await lock.release();
    await session.close();
    const refused = await connect(`redis://${server.address}/1?namespace=config`, {
      sessionTimeoutMs: 2_000,
      connectTimeoutMs: 5_000,
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(BatonError);
    expect(refused).toMatchObject({ code: 'UNSUPPORTED_SERVER' });
    expect((refused as Error).message).toContain('database 0');
    // Only the lock's counter stays (tokens never go back): no session's key, no entry.
    await withRedisAdmin({ url: `redis://${server.address}`, sessionTimeoutMs: 2_000 }, async (client) =>
      expect(await client.keys('*')).toEqual(['baton:{config/x}:c']),
    );
  });
});

describe('Redis: a password rotated on the server while sessions run', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis({ args: ['--requirepass', SECRET] });
  });
  afterAll(async () => server?.stop());

  it("a wait whose subscription fails at the reconnect's AUTH rejects without the password", async () => {
    const url = `redis://:${SECRET}@${server.address}?namespace=rotated`;
    const [a, b] = [await connect(url, { sessionTimeoutMs: 2_000 }), await connect(url, { sessionTimeoutMs: 2_000 })];
    const admin = new Redis({ host: '127.0.0.1', port: server.port, password: SECRET, maxRetriesPerRequest: 1 });
    admin.on('error', () => undefined);
    try {
      const [x, y] = [await new FairMutex(a, 'x').acquire(), await new FairMutex(a, 'y').acquire()];
      // b waits for x: its subscriber connection is in subscribe mode.
      const first = later(new FairMutex(b, 'x').acquire({ timeoutMs: 10_000 }));
      await eventually(
        'b subscribed',
        async () => ((await admin.call('PUBSUB', 'NUMSUB', entryOf(x).key)) as [string, number])[1] === 1,
      );
      // The password changes; b's subscriber is dropped and dials again with the old one: AUTH fails.
      await admin.config('SET', 'requirepass', 'rotated-pw-Lm2');
      await admin.auth('rotated-pw-Lm2');
      await admin.client('KILL', 'TYPE', 'pubsub');
      // b's wait for y subscribes on that connection: the AUTH error rejects the SUBSCRIBE.
      const refused = await new FairMutex(b, 'y').acquire({ timeoutMs: 10_000 }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(Error);
      expect(inspect(refused, { depth: 20, showHidden: true })).not.toContain(SECRET);
      expect(JSON.stringify(refused, Object.getOwnPropertyNames(refused))).not.toContain(SECRET);
      first.catch(() => undefined);
      await Promise.allSettled([x.release(), y.release()]);
    } finally {
      await Promise.allSettled([a.close(), b.close()]);
      admin.disconnect();
    }
  });
});

describe('Redis: a stopped watchdog and a connection that comes back', () => {
  let server: RedisServer;
  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => server?.stop());

  it('the reconnect renews nothing once the watchdog is stopped: the session key expires and the session is lost', async () => {
    const sessionTimeoutMs = 1_000;
    const session = await connect(`redis://${server.address}?namespace=stopped`, { sessionTimeoutMs });
    const admin = new Redis({ host: '127.0.0.1', port: server.port, maxRetriesPerRequest: 1 });
    admin.on('error', () => undefined);
    try {
      const probe = redisProbeOf(session);
      probe.view.stopWatchdog();
      const states: string[] = [];
      session.on('state', (state: string) => states.push(state));
      // The server is this test's own: every normal client but the admin is the session's.
      await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
      await eventually('the session lost', () => session.state === 'lost', sessionTimeoutMs * 3);
      // Suspended by the cut, then lost: no renewal on the way back made it connected again.
      expect(states).toEqual(['suspended', 'lost']);
      // The local deadline comes first; the server lets the key go by its own clock, unrenewed.
      await eventually(
        'the key expired',
        async () => (await admin.exists(probe.view.sessionKey)) === 0,
        sessionTimeoutMs * 2,
      );
    } finally {
      await session.close().catch(() => undefined);
      admin.disconnect();
    }
  });
});

describe('Redis: sessions, tokens and scripts', () => {
  const scope = useScope(redisFixture);
  const info = inject('redisStandalone');

  it('keeps the lock counter when the queue empties: tokens only grow, and a wiped counter is seeded from the server clock above them', async () => {
    const a = await scope.open();
    const mutex = new FairMutex(a, 'tokens');
    const tokens: bigint[] = [];
    for (let i = 0; i < 3; i += 1) {
      const lock = await mutex.acquire();
      tokens.push(lock.fencingToken);
      await lock.release();
    }
    expect(tokens[1]).toBeGreaterThan(tokens[0]!);
    expect(tokens[2]).toBeGreaterThan(tokens[1]!);
    // Microseconds of the server clock: above 2^50, below 2^63.
    expect(tokens[0]!).toBeGreaterThan(2n ** 50n);
    await withRedisAdmin(info, async (client) =>
      expect(await client.get(`baton:{${scope.namespace}/tokens}:c`)).toBe(String(tokens[2])),
    );
    // A server that lost its data (no persistence) starts the counter again from its clock.
    await withRedisAdmin(info, async (client) => void (await client.del(`baton:{${scope.namespace}/tokens}:c`)));
    const after = await mutex.acquire();
    expect(after.fencingToken).toBeGreaterThan(tokens[2]!);
    await after.release();
  });

  it('a counter that went back (a crash that lost its last writes, a snapshot restored, a failover) still gives a larger token: the server clock', async () => {
    const a = await scope.open();
    const mutex = new FairMutex(a, 'rollback');
    const counter = `baton:{${scope.namespace}/rollback}:c`;
    const first = await mutex.acquire();
    await first.release();
    const second = await mutex.acquire();
    await second.release();
    // The counter as it stood before the second acquisition (its write lost).
    await withRedisAdmin(info, async (client) => void (await client.set(counter, String(first.fencingToken))));
    const third = await mutex.acquire();
    expect(third.fencingToken).toBeGreaterThan(second.fencingToken);
    await third.release();
    // A counter ahead of the clock (a clock that went back, a busy lock) goes on from itself.
    const ahead = BigInt(Date.now()) * 1000n + 10n ** 12n; // some eleven days ahead
    await withRedisAdmin(info, async (client) => void (await client.set(counter, String(ahead))));
    const fourth = await mutex.acquire();
    expect(fourth.fencingToken).toBe(ahead + 1n);
    await fourth.release();
  });

  it('a renewal after the session key expired does not bring the session back: the session is lost', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const lock = await new FairMutex(a, 'late').acquire();
    const probe = redisProbeOf(a);
    probe.view.stopWatchdog();
    // The holder hears of it before the server lets the key go: the deadline is local.
    await eventually('the holder told', () => lock.signal.aborted, info.sessionTimeoutMs * 2);
    await eventually(
      'the key expired on the server',
      () => withRedisAdmin(info, async (client) => (await client.exists(probe.view.sessionKey)) === 0),
      info.sessionTimeoutMs * 2,
    );
    // What a late renewal would send: it answers nothing and creates nothing.
    await withRedisAdmin(info, async (client) => {
      expect(await client.pexpire(probe.view.sessionKey, info.sessionTimeoutMs)).toBe(0);
      expect(await client.exists(probe.view.sessionKey)).toBe(0);
    });
    expect(a.state).toBe('lost');
    // Its entry is dead once its key in the lock has expired too (set at the enqueue, it may outlive the
    // session's key by up to a renewal period): the next script that reads the queue then drops it.
    await eventually(
      'the entry dropped',
      async () => (await backendOf(b).list('late')).length === 0,
      info.sessionTimeoutMs,
    );
  });

  it("drops an expired session's entries inside the next script that reads the queue, and wakes its waiter at once", async () => {
    const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'expired').acquire();
    const waiting = later(new FairMutex(b, 'expired').acquire());
    await eventually('b queued', async () => (await backendOf(c).list('expired')).length === 2);
    // a's keys go, as at their expiry; nobody deletes its entry.
    redisProbeOf(a).view.stopWatchdog();
    await scope.fixture.expire(a);
    const before = redisCounters.notifications;
    // c's listing (the list script) drops the entry and tells b's channel.
    expect((await backendOf(c).list('expired')).length).toBe(1);
    const granted = await waiting;
    expect(redisCounters.notifications - before).toBe(1);
    await granted.release();
    // a's own session finds its key gone at its next confirm of the hold.
    await eventually('a told', () => held.signal.aborted, scope.fixture.lossDeadlineMs);
    expect(a.state).toBe('lost');
  });

  it('an entry deleted by hand (HDEL, no notification) wakes its waiter at the backstop read, within a quarter of the timeout', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'by-hand').acquire();
    const waiting = later(new FairMutex(b, 'by-hand').acquire({ timeoutMs: info.sessionTimeoutMs * 2 }));
    await eventually('b watching', async () => (await scope.fixture.watched(scope.namespace)).length === 1);
    const wakes = redisCounters.backstopWakes;
    const at = entryOf(held).key.lastIndexOf(':e:');
    const started = performance.now();
    await withRedisAdmin(
      info,
      async (client) =>
        void (await client.hdel(`${entryOf(held).key.slice(0, at)}:q`, entryOf(held).key.slice(at + 3))),
    );
    const granted = await waiting;
    // Two backstop reads, an eighth of the timeout apart: a quarter of it (half, for a loaded machine's late timers).
    expect(performance.now() - started).toBeLessThan(info.sessionTimeoutMs / 2);
    expect(redisCounters.backstopWakes - wakes).toBe(1);
    await granted.release();
    await eventually('a told its entry is gone', () => held.signal.aborted, scope.fixture.lossDeadlineMs);
  });

  it('the backstop of waiters looks only at the entries they wait for, every quarter of the timeout: no waiter reads the whole queue', async () => {
    const holder = await scope.open();
    const waiters = await Promise.all([1, 2, 3, 4, 5].map(() => scope.open()));
    const held = await new FairMutex(holder, 'backstop').acquire();
    const queueKey = `baton:{${scope.namespace}/backstop}:q`;
    const waiting = waiters.map((session) => later(new FairMutex(session, 'backstop').acquire({ timeoutMs: 20_000 })));
    await eventually('all queued', async () => (await backendOf(holder).list('backstop')).length === 6);
    await eventually(
      'all watching',
      async () =>
        (await scope.fixture.watched(scope.namespace)).length >= 1 && redisCountersWatchers(scope.namespace) === 5,
    );
    const sha = (lua: string): string => createHash('sha1').update(lua).digest('hex');
    const named = new Map([
      [sha(SCRIPTS.batonList.lua), 'list'],
      [sha(SCRIPTS.batonGone.lua), 'gone'],
      [SCRIPTS.batonList.lua, 'list'],
      [SCRIPTS.batonGone.lua, 'gone'],
    ]);
    const counts = { list: 0, gone: 0 };
    const monitorClient = new Redis(info.url, { lazyConnect: true });
    const monitor = await monitorClient.monitor();
    monitor.on('error', () => undefined);
    monitor.on('monitor', (_time: string, args: string[], source: string) => {
      if (source === 'lua' || !/^eval(sha)?$/i.test(args[0] ?? '') || !args.includes(queueKey)) return;
      const script = named.get(args[1] ?? '');
      if (script !== undefined) counts[script as 'list' | 'gone'] += 1;
    });
    const windowMs = info.sessionTimeoutMs * 0.75;
    await new Promise((resolve) => setTimeout(resolve, windowMs));
    monitor.disconnect();
    monitorClient.disconnect();
    // Without the gone script each waiter read the whole queue every eighth of the timeout.
    expect(counts.list).toBe(0);
    expect(counts.gone).toBeGreaterThanOrEqual(waiters.length);
    expect(counts.gone).toBeLessThanOrEqual(waiters.length * (windowMs / (info.sessionTimeoutMs / 4) + 1));
    await held.release();
    for (const wait of waiting) await (await wait).release();
  });

  it('a lost notification is covered by the backstop read', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'muted').acquire();
    redisProbeOf(b).muteNotifications = true;
    const waiting = later(new FairMutex(b, 'muted').acquire({ timeoutMs: info.sessionTimeoutMs * 2 }));
    await eventually('b watching', async () => (await scope.fixture.watched(scope.namespace)).length === 1);
    const wakes = redisCounters.backstopWakes;
    await held.release();
    const granted = await waiting;
    expect(redisCounters.backstopWakes - wakes).toBe(1);
    await granted.release();
  });

  it('a wait begun with an aborted signal rejects with its reason and leaves no channel behind', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'aborted').acquire();
    const reason = new Error('given up before');
    const refused = await backendOf(b)
      .waitGone(entryOf(held), AbortSignal.abort(reason))
      .catch((error: unknown) => error);
    expect(refused).toBe(reason);
    const changes = await backendOf(b)
      .waitChange('aborted', [], AbortSignal.abort(reason))
      .catch((error: unknown) => error);
    expect(changes).toBe(reason);
    expect(redisProbeOf(b).view.waitedChannels).toBe(0);
    await held.release();
  });

  it('observers of one queue are each judged by the listing they saw: the backstop wakes only the one whose listing changed', async () => {
    const [a, b, o] = [await scope.open(), await scope.open(), await scope.open()];
    redisProbeOf(o).muteNotifications = true;
    const first = await new FairMutex(a, 'observed').acquire();
    const seenBefore = await backendOf(o).list('observed');
    const stale = track(backendOf(o).waitChange('observed', seenBefore, new AbortController().signal));
    // Its subscription stands and its first look is done (the queue was as it saw it).
    await eventually('the first observer armed', () => redisWatches.has(`baton:{${scope.namespace}/observed}:q`));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(stale.settled).toBe(false);
    const second = later(new FairMutex(b, 'observed').acquire({ timeoutMs: 10_000 }));
    await eventually('b queued', async () => (await backendOf(o).list('observed')).length === 2);
    const giveUp = new AbortController();
    const current = track(backendOf(o).waitChange('observed', await backendOf(o).list('observed'), giveUp.signal));
    await eventually('the stale observer woken by the backstop', () => stale.settled, info.sessionTimeoutMs);
    // Two more backstop rounds: the queue is still what the other observer saw.
    await new Promise((resolve) => setTimeout(resolve, info.sessionTimeoutMs / 2 + 100));
    expect(current.settled).toBe(false);
    giveUp.abort(new Error('done'));
    await current.promise.catch(() => undefined);
    await first.release();
    await (await second).release();
  });

  it("a wait given up before its subscription was answered does not take away another session's count of that channel", async () => {
    const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'counted').acquire();
    const waiting = later(new FairMutex(b, 'counted').acquire({ timeoutMs: 10_000 }));
    await eventually('b watching', async () => (await scope.fixture.watched(scope.namespace)).length === 1);
    expect(redisWatches.get(entryOf(held).key)).toBe(1);
    const giveUp = new AbortController();
    const gone = backendOf(c)
      .waitGone(entryOf(held), giveUp.signal)
      .catch(() => undefined);
    giveUp.abort(new Error('at once'));
    await gone;
    await new Promise((resolve) => setTimeout(resolve, 50)); // c's subscribe and unsubscribe answered
    expect(redisWatches.get(entryOf(held).key)).toBe(1);
    await held.release();
    await (await waiting).release();
  });

  it("read() of an entry whose session key is gone answers null (a dead leader's data is not read back)", async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'read-dead').acquire();
    expect(await backendOf(b).read(entryOf(held))).toBe('');
    redisProbeOf(a).view.stopWatchdog();
    await scope.fixture.expire(a);
    expect(await backendOf(b).read(entryOf(held))).toBeNull();
  });

  it("refuses an enqueue in a lock where the session's key is gone although it has entries there (never an entry beside dead ones)", async () => {
    const a = await scope.open();
    const held = await new FairMutex(a, 'after-end').acquire();
    redisProbeOf(a).view.stopWatchdog();
    await scope.fixture.expire(a);
    const refused = await new FairMutex(a, 'after-end').acquire().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(SessionLostError);
    expect(a.state).toBe('lost');
    expect(held.signal.aborted).toBe(true);
    expect(await scope.fixture.entries(scope.namespace)).toEqual([]);
  });

  it("keeps the session's key in a lock while it has entries there, renewed with its own; lets it expire after the last release; close deletes them all", async () => {
    const a = await scope.open();
    const liveness = `baton:{${scope.namespace}/kept}:s:${a.id}`;
    const lock = await new FairMutex(a, 'kept').acquire();
    await withRedisAdmin(info, async (client) => {
      // A whole timeout later it still has most of one left: the watchdog renews it.
      await eventually(
        'renewed',
        async () => (await client.pttl(liveness)) > info.sessionTimeoutMs / 2,
        info.sessionTimeoutMs,
      );
      await new Promise((resolve) => setTimeout(resolve, info.sessionTimeoutMs));
      expect(await client.pttl(liveness)).toBeGreaterThan(info.sessionTimeoutMs / 2);
    });
    await lock.release();
    await withRedisAdmin(info, async (client) => {
      await eventually('left to expire', async () => (await client.exists(liveness)) === 0, info.sessionTimeoutMs * 2);
    });
    const again = await new FairMutex(a, 'kept').acquire();
    await new FairMutex(a, 'other').acquire();
    await a.close();
    expect(again.signal.aborted).toBe(true);
    expect(await scope.fixture.liveSessions([a.id])).toEqual([]);
  });

  it('a lock key of another type (an operator mistake) fails the acquire and touches nothing', async () => {
    const a = await scope.open();
    await withRedisAdmin(
      info,
      async (client) => void (await client.set(`baton:{${scope.namespace}/wrong}:q`, 'not a hash')),
    );
    const failed = await new FairMutex(a, 'wrong').acquire().catch((error: unknown) => error);
    expect(failed).toBeInstanceOf(BackendError);
    await withRedisAdmin(info, async (client) => {
      expect(await client.get(`baton:{${scope.namespace}/wrong}:q`)).toBe('not a hash');
      expect(await client.exists(`baton:{${scope.namespace}/wrong}:c`)).toBe(0);
      await client.del(`baton:{${scope.namespace}/wrong}:q`);
    });
    expect(a.state).toBe('connected');
  });

  it('keeps every key of a lock in one cluster slot (one hash tag)', async () => {
    const a = await scope.open();
    const lock = await new FairMutex(a, 'slots/one').acquire();
    await withRedisAdmin(info, async (client: Redis) => {
      const slots = new Set(
        await Promise.all(
          [
            `baton:{${scope.namespace}/slots/one}:q`,
            `baton:{${scope.namespace}/slots/one}:c`,
            `baton:{${scope.namespace}/slots/one}:s:${a.id}`,
          ].map((key) => client.call('CLUSTER', 'KEYSLOT', key).catch(() => keyslotWithoutCluster(key))),
        ),
      );
      expect(slots.size).toBe(1);
    });
    await lock.release();
  });
});

/** How many sessions wait on channels of the namespace's locks. */
function redisCountersWatchers(namespace: string): number {
  let count = 0;
  for (const [channel, sessions] of redisWatches) if (channel.startsWith(`baton:{${namespace}/`)) count += sessions;
  return count;
}

/** A server not in cluster mode still answers CLUSTER KEYSLOT on 7.0; this stands in should it not. */
function keyslotWithoutCluster(key: string): string {
  return key.slice(key.indexOf('{') + 1, key.indexOf('}'));
}

import { describe, expect, it } from 'vitest';

import { LeaderElection } from '../../recipes/election.js';
import { FairMutex } from '../../recipes/mutex.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import { Semaphore } from '../../recipes/semaphore.js';
import { type QueueView, runInspect } from '../../src/inspect.js';
import { etcdFixture } from '../harness/backends/etcd.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { memoryFixture } from '../harness/backends/memory.js';
import { mysqlFixture } from '../harness/backends/mysql.js';
import { postgresFixture } from '../harness/backends/postgres.js';
import { redisFixture } from '../harness/backends/redis.js';
import { useScope } from '../harness/backends/scope.js';
import { zkFixture } from '../harness/backends/zookeeper.js';
import { backendOf } from '../harness/internals.js';
import { runBaton } from '../harness/run-cli.js';
import { freePort } from '../harness/servers/ports.js';
import { eventually, later } from '../harness/wait.js';

function inspectSuite(getFixture: () => Fixture): void {
  describe(`baton inspect on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);
    const url = (): string => scope.fixture.url(scope.namespace);

    it('shows holders and waiters in order with kind, session, age, fencing token and candidate id', async () => {
      const [r1, r2, w, r3] = [await scope.open(), await scope.open(), await scope.open(), await scope.open()];
      const readers = [
        await new ReadWriteLock(r1, 'config/pricing').readLock.acquire(),
        await new ReadWriteLock(r2, 'config/pricing').readLock.acquire(),
      ];
      const writer = later(new ReadWriteLock(w, 'config/pricing').writeLock.acquire());
      await eventually(
        'the writer queued',
        async () => (await backendOf(w).list('config/pricing')).length === 3,
        2_000,
      );
      const lateReader = later(new ReadWriteLock(r3, 'config/pricing').readLock.acquire());
      await eventually(
        'the late reader queued',
        async () => (await backendOf(w).list('config/pricing')).length === 4,
        2_000,
      );
      const leader = await new LeaderElection(r1, 'scheduler', { id: 'worker-7' }).campaign();

      const views: QueueView[] = [];
      const inspect = async (name: string, json: boolean): Promise<string> => {
        let out = '';
        await runInspect({
          url: url(),
          name,
          json,
          watch: false,
          connectTimeoutMs: 5_000,
          write: (text) => (out += text),
        });
        if (json) views.push(JSON.parse(out) as QueueView);
        return out;
      };
      await inspect('config/pricing', true);
      const view = views[0]!;
      expect(view.entries.map((e) => [e.position, e.role, e.kind, e.session])).toEqual([
        [1, 'holder', 'read', r1.id],
        [2, 'holder', 'read', r2.id],
        [3, 'waiter', 'write', w.id],
        [4, 'waiter', 'read', r3.id],
      ]);
      // On ZooKeeper baton names its entries as Curator does, by default.
      const client = scope.fixture.name.startsWith('ZooKeeper') ? 'curator' : 'baton';
      expect(view.entries.map((e) => e.client)).toEqual([client, client, client, client]);
      expect(view.entries.slice(0, 2).map((e) => e.fencingToken)).toEqual(
        readers.map((lock) => lock.fencingToken.toString()),
      );
      for (const entry of view.entries) {
        if (scope.fixture.name.startsWith('postgres') || scope.fixture.name.startsWith('mysql')) {
          expect(entry.ageMs).toBeGreaterThanOrEqual(0);
          expect(entry.expiresInMs, "the owner's lease left, by the server's clock").toBeGreaterThan(0);
        } else if (scope.fixture.name.startsWith('etcd')) {
          expect(entry.ageMs, 'etcd keeps no time with a key').toBeNull();
          expect(entry.expiresInMs).toBeGreaterThan(0);
        } else if (scope.fixture.name.startsWith('Redis')) {
          // The server's clock: the entry's creation and the owner's session key's time to live.
          expect(entry.ageMs).toBeGreaterThanOrEqual(-1_000);
          expect(entry.ageMs).toBeLessThan(60_000);
          expect(entry.expiresInMs).toBeGreaterThan(0);
        } else {
          expect(entry.ageMs).toBeGreaterThanOrEqual(0);
          expect(entry.ageMs).toBeLessThan(60_000);
        }
      }
      const table = await inspect('config/pricing', false);
      expect(table).toMatch(/config\/pricing: 2 holders, 2 waiting/);
      expect(table).toMatch(/#\s+role\s+kind\s+client\s+session\s+age\s+lease left\s+fencing token\s+id/);
      expect(table.split('\n').filter((line) => line.includes(w.id))[0]).toMatch(/^3\s+waiter\s+write/);

      await inspect('scheduler', true);
      expect(views[1]!.entries).toMatchObject([
        { role: 'holder', kind: 'candidate', data: 'worker-7', fencingToken: leader.fencingToken.toString() },
      ]);
      expect(await inspect('nobody/here', false)).toMatch(/^nobody\/here: free/);

      await leader.resign();
      for (const lock of readers) await lock.release();
      await (await writer).release();
      await (await lateReader).release();
    });

    it("shows a semaphore's holders and waiters with the permits each holds or asks for", async () => {
      const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
      const two = await new Semaphore(a, 'bank-api', { permits: 3 }).acquire({ count: 2 });
      const one = await new Semaphore(b, 'bank-api', { permits: 3 }).acquire();
      const waiting = later(new Semaphore(c, 'bank-api', { permits: 3 }).acquire({ count: 2 }));
      await eventually('the waiter queued', async () => (await backendOf(c).list('bank-api')).length === 3, 2_000);
      let json = '';
      await runInspect({
        url: url(),
        name: 'bank-api',
        json: true,
        watch: false,
        connectTimeoutMs: 5_000,
        write: (text) => (json += text),
      });
      const view = JSON.parse(json) as QueueView;
      expect(view.entries.map((e) => [e.role, e.kind, e.count, e.permits, e.session])).toEqual([
        ['holder', 'semaphore', 2, 3, a.id],
        ['holder', 'semaphore', 1, 3, b.id],
        ['waiter', 'semaphore', 2, 3, c.id],
      ]);
      expect(view.entries.map((e) => e.client)).toEqual(['baton', 'baton', 'baton']);
      let table = '';
      await runInspect({
        url: url(),
        name: 'bank-api',
        json: false,
        watch: false,
        connectTimeoutMs: 5_000,
        write: (text) => (table += text),
      });
      expect(table).toMatch(/bank-api: 2 holders \(3 of 3 permits\), 1 waiting/);
      expect(table.split('\n').filter((line) => line.includes(c.id))[0]).toMatch(/^3\s+waiter\s+semaphore 2\/3/);
      await one.release();
      await two.release();
      await (await waiting).release();
    });

    it('--watch prints again at every change until stopped, and leaves no watch behind', async () => {
      const [a, b, operator] = [await scope.open(), await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'jobs').acquire();
      const printed: QueueView[] = [];
      const stop = new AbortController();
      const watching = later(
        runInspect({
          url: url(),
          name: 'jobs',
          json: true,
          watch: true,
          connectTimeoutMs: 5_000,
          signal: stop.signal,
          write: (text) => printed.push(JSON.parse(text) as QueueView),
        }),
      );
      await eventually('the first picture', () => printed.length === 1, 5_000);
      expect(printed[0]!.entries.map((e) => e.session)).toEqual([a.id]);
      const next = later(new FairMutex(b, 'jobs').acquire());
      await eventually('b shown waiting', () => printed.at(-1)!.entries.length === 2, 5_000);
      expect(printed.at(-1)!.entries.map((e) => [e.role, e.session])).toEqual([
        ['holder', a.id],
        ['waiter', b.id],
      ]);
      await held.release();
      const taken = await next;
      await eventually(
        'b shown holding',
        () => printed.at(-1)!.entries.length === 1 && printed.at(-1)!.entries[0]!.session === b.id,
        5_000,
      );
      await taken.release();
      await eventually('the queue shown empty', () => printed.at(-1)!.entries.length === 0, 5_000);
      stop.abort();
      await watching;
      // The watching session is closed; what it watched is gone with it (the scope checks the server).
      expect(await backendOf(operator).list('jobs')).toEqual([]);
    });
  });
}

inspectSuite(memoryFixture);
inspectSuite(() => zkFixture('zkStandalone'));
inspectSuite(() => etcdFixture('etcdStandalone'));
inspectSuite(postgresFixture);
inspectSuite(mysqlFixture);
inspectSuite(redisFixture);

describe('baton inspect, the command', () => {
  it('exits 2 naming the problem for an invalid name or URL, before connecting', async () => {
    const badName = await runBaton(['inspect', 'zk://127.0.0.1:2181/x', 'a//b']);
    expect(badName.code).toBe(2);
    expect(badName.stderr).toMatch(/invalid name "a\/\/b"/);
    const badUrl = await runBaton(['inspect', 'ftp://127.0.0.1/x', 'a']);
    expect(badUrl.code).toBe(2);
    expect(badUrl.stderr).toMatch(/url scheme "ftp:".*zk:, etcd:, postgres:, mysql:, redis:, rediss: or memory:/);
  });

  it('exits 1 with a clear message when the server is unreachable', async () => {
    const port = await freePort(); // nothing listens on it
    const urlOf = (scheme: string): string =>
      scheme === 'redis' ? `redis://127.0.0.1:${port}/0?namespace=x` : `${scheme}://127.0.0.1:${port}/x`;
    for (const scheme of ['zk', 'etcd', 'redis', 'mysql']) {
      const result = await runBaton(['inspect', urlOf(scheme), 'a', '--connect-timeout', '1000']);
      expect(result.code, `${scheme}: ${result.stderr}`).toBe(1);
      expect(result.stderr).toMatch(
        new RegExp(
          `could not (connect to ZooKeeper|open an etcd session|connect to Redis|connect to MySQL) at (http://|mysql://)?127\\.0\\.0\\.1:${port}(/x)? within 1000 ms`,
        ),
      );
    }
    // Credentials of every backend in the environment: each URL takes only its own, and none is printed.
    const env = {
      BATON_ZK_DIGEST: 'ops:zk-secret-1',
      BATON_ETCD_USER: 'ops',
      BATON_ETCD_PASSWORD: 'etcd-secret-2',
      BATON_REDIS_PASSWORD: 'redis-secret-3',
      MYSQL_PWD: 'mysql-secret-4',
    };
    for (const scheme of ['zk', 'etcd', 'redis', 'mysql']) {
      const result = await runBaton(['inspect', urlOf(scheme), 'a', '--connect-timeout', '1000'], env);
      expect(result.code, `${scheme}: ${result.stderr}`).toBe(1);
      expect(result.stderr).not.toMatch(/secret/);
    }
  });
});

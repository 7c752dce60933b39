import { describe, expect, it } from 'vitest';

import { LeaderElection } from '../../../recipes/election.js';
import { InvalidArgumentError } from '../../../recipes/errors.js';
import { MultiLock } from '../../../recipes/multilock.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { ReadWriteLock } from '../../../recipes/rw-lock.js';
import { Semaphore } from '../../../recipes/semaphore.js';
import { etcdFixture } from '../../harness/backends/etcd.js';
import type { Fixture } from '../../harness/backends/fixture.js';
import { memoryFixture } from '../../harness/backends/memory.js';
import { mysqlFixture } from '../../harness/backends/mysql.js';
import { postgresFixture } from '../../harness/backends/postgres.js';
import { redisFixture } from '../../harness/backends/redis.js';
import { useScope } from '../../harness/backends/scope.js';
import { zkFixture } from '../../harness/backends/zookeeper.js';
import { expectQueueLength } from '../../harness/internals.js';
import { later } from '../../harness/wait.js';

/** `participants()` of every recipe, written once and run on every backend (as the contract suites are). */
function participantsSuite(getFixture: () => Fixture): void {
  describe(`participants() on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it('FairMutex: the holder then the waiters in order, with session, token and key, from any session', async () => {
      const [a, b, observer] = [await scope.open(), await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'jobs').acquire();
      const waiting = later(new FairMutex(b, 'jobs').acquire());
      await expectQueueLength(observer, 'jobs', 2);
      const list = await new FairMutex(observer, 'jobs').participants({ timeoutMs: 5_000 });
      expect(list.map((p) => [p.position, p.role, p.kind])).toEqual([
        [1, 'holder', 'lock'],
        [2, 'waiter', 'lock'],
      ]);
      expect(list[0]!.sessionId).toContain(a.id);
      expect(list[1]!.sessionId).toContain(b.id);
      expect(list[0]!.fencingToken).toBe(held.fencingToken);
      expect(typeof list[1]!.fencingToken).toBe('bigint');
      expect(list.every((p) => p.id === '' && p.key.length > 0)).toBe(true);
      expect(list.every((p) => p.ageMs === null || (p.ageMs >= 0 && p.ageMs < 60_000))).toBe(true);
      await held.release();
      await (await waiting).release();
      expect(await new FairMutex(observer, 'jobs').participants()).toEqual([]);
    });

    it('ReadWriteLock: readers share, a writer waits, a reader behind it waits', async () => {
      const [a, b, c, d] = [await scope.open(), await scope.open(), await scope.open(), await scope.open()];
      const r1 = await new ReadWriteLock(a, 'cfg').readLock.acquire();
      const r2 = await new ReadWriteLock(b, 'cfg').readLock.acquire();
      const w = later(new ReadWriteLock(c, 'cfg').writeLock.acquire());
      await expectQueueLength(d, 'cfg', 3);
      const r3 = later(new ReadWriteLock(d, 'cfg').readLock.acquire());
      await expectQueueLength(d, 'cfg', 4);
      const list = await new ReadWriteLock(d, 'cfg').participants();
      expect(list.map((p) => `${p.role} ${p.kind}`)).toEqual([
        'holder read',
        'holder read',
        'waiter write',
        'waiter read',
      ]);
      await Promise.all([r1.release(), r2.release()]);
      await (await w).release();
      await (await r3).release();
    });

    it("LeaderElection: the leader first with its id, then the candidates'", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const leadership = await new LeaderElection(a, 'leader', { id: 'worker-1' }).campaign();
      const second = later(new LeaderElection(b, 'leader', { id: 'worker-2' }).campaign());
      await expectQueueLength(b, 'leader', 2);
      const list = await new LeaderElection(b, 'leader', { id: 'worker-2' }).participants();
      expect(list.map((p) => [p.role, p.kind, p.id])).toEqual([
        ['holder', 'candidate', 'worker-1'],
        ['waiter', 'candidate', 'worker-2'],
      ]);
      expect(list[0]!.fencingToken).toBe(leadership.fencingToken);
      await leadership.resign();
      await (await second).resign();
    });

    it('Semaphore: each entry with the permits it holds or asks for', async () => {
      const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
      const pool = (session: typeof a): Semaphore => new Semaphore(session, 'pool', { permits: 3 });
      const p1 = await pool(a).acquire({ count: 2 });
      const p2 = await pool(b).acquire();
      const p3 = later(pool(c).acquire({ count: 2 }));
      await expectQueueLength(c, 'pool', 3);
      const list = await pool(c).participants();
      expect(list.map((p) => [p.role, p.kind, p.count, p.permits])).toEqual([
        ['holder', 'semaphore', 2, 3],
        ['holder', 'semaphore', 1, 3],
        ['waiter', 'semaphore', 2, 3],
      ]);
      await Promise.all([p1.release(), p2.release()]);
      await (await p3).release();
    });

    it("MultiLock: each name's queue, by name", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const both = await new MultiLock(a, ['acct/2', 'acct/1']).acquire();
      const one = later(new FairMutex(b, 'acct/2').acquire());
      await expectQueueLength(b, 'acct/2', 2);
      const byName = await new MultiLock(b, ['acct/1', 'acct/2']).participants();
      expect([...byName.keys()]).toEqual(['acct/1', 'acct/2']);
      expect(byName.get('acct/1')!.map((p) => p.role)).toEqual(['holder']);
      expect(byName.get('acct/2')!.map((p) => p.role)).toEqual(['holder', 'waiter']);
      expect(byName.get('acct/2')![1]!.sessionId).toContain(b.id);
      await both.release();
      await (await one).release();
    });

    it('gives up on abort and refuses bad options, before asking the server', async () => {
      const session = await scope.open();
      const mutex = new FairMutex(session, 'jobs');
      const reason = new Error('stop');
      await expect(mutex.participants({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
      await expect(mutex.participants({ timeout: 5 } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(mutex.participants({ timeoutMs: -1 })).rejects.toBeInstanceOf(InvalidArgumentError);
    });
  });
}

participantsSuite(memoryFixture);
participantsSuite(() => zkFixture('zkStandalone'));
participantsSuite(() => etcdFixture('etcdStandalone'));
participantsSuite(postgresFixture);
participantsSuite(mysqlFixture);
participantsSuite(redisFixture);

import { describe, expect, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { LeaderElection } from '../../../recipes/election.js';
import { HoldLimitError, InvalidArgumentError, LockLostError } from '../../../recipes/errors.js';
import type { LockEvent } from '../../../recipes/events.js';
import { MultiLock } from '../../../recipes/multilock.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { ReadWriteLock } from '../../../recipes/rw-lock.js';
import { Semaphore } from '../../../recipes/semaphore.js';
import { MAX_TIMEOUT_MS } from '../../../recipes/validate.js';
import { etcdFixture } from '../../harness/backends/etcd.js';
import type { Fixture } from '../../harness/backends/fixture.js';
import { memoryFixture } from '../../harness/backends/memory.js';
import { mysqlFixture } from '../../harness/backends/mysql.js';
import { postgresFixture } from '../../harness/backends/postgres.js';
import { redisFixture } from '../../harness/backends/redis.js';
import { useScope } from '../../harness/backends/scope.js';
import { zkFixture } from '../../harness/backends/zookeeper.js';
import { queueLength } from '../../harness/internals.js';

const LIMIT_MS = 400;
/** Code that never returns: the holder the limit is for. */
const hang = (): Promise<never> => new Promise<never>(() => undefined);

/** `maxHoldMs` on every recipe, written once and run on every backend. */
function holdLimitSuite(getFixture: () => Fixture): void {
  describe(`maxHoldMs on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    /** Waits for `signal` to abort; resolves with its reason and how long after `since` it came. */
    const aborted = (signal: AbortSignal, since: number): Promise<{ reason: unknown; afterMs: number }> =>
      new Promise((resolve) =>
        signal.addEventListener('abort', () => resolve({ reason: signal.reason, afterMs: performance.now() - since }), {
          once: true,
        }),
      );

    it('withLock whose code hangs: the signal aborts with HoldLimitError, the entry goes, the next waiter is granted', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const events: LockEvent[] = [];
      a.on('lock', (event) => events.push(event));
      const holding = new Promise<{ lost: Promise<{ reason: unknown; afterMs: number }>; at: number }>((resolve) => {
        new FairMutex(a, 'jobs')
          .withLock(
            (lock) => {
              resolve({ lost: aborted(lock.signal, performance.now()), at: performance.now() });
              return hang();
            },
            { maxHoldMs: LIMIT_MS },
          )
          .catch(() => undefined);
      });
      const { lost, at: grantedAt } = await holding;
      const next = await new FairMutex(b, 'jobs').acquire({ timeoutMs: 10_000 });
      const waitedMs = performance.now() - grantedAt;
      const { reason, afterMs } = await lost;
      expect(reason).toBeInstanceOf(HoldLimitError);
      expect(reason).toBeInstanceOf(LockLostError);
      expect((reason as HoldLimitError).code).toBe('LOCK_LOST');
      expect((reason as HoldLimitError).maxHoldMs).toBe(LIMIT_MS);
      expect((reason as Error).message).toMatch(/held longer than its maxHoldMs \(400 ms\)/);
      expect(afterMs).toBeGreaterThanOrEqual(LIMIT_MS - 5);
      expect(waitedMs).toBeGreaterThanOrEqual(LIMIT_MS - 5);
      expect(await queueLength(b, 'jobs')).toBe(1);
      expect(events.find((event) => event.type === 'lost')).toMatchObject({ reason: expect.any(HoldLimitError) });
      await next.release();
    });

    it('a hold released in time is not cut later, and a later hold has no limit it did not ask for', async () => {
      const session = await scope.open();
      const mutex = new FairMutex(session, 'jobs');
      const first = await mutex.acquire({ maxHoldMs: 150 });
      await first.release();
      const second = await mutex.acquire();
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(first.signal.aborted).toBe(false);
      expect(second.held).toBe(true);
      await second.release();
    });

    it('read and write locks, a semaphore, a leadership and a multi-lock end at their limit', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const limited = { maxHoldMs: LIMIT_MS };
      const holds = [
        await new ReadWriteLock(a, 'cfg').writeLock.acquire(limited),
        await new Semaphore(a, 'pool', { permits: 2 }).acquire({ count: 2, ...limited }),
        await new LeaderElection(a, 'leader', { id: 'a' }).campaign(limited),
        await new MultiLock(a, ['m/1', 'm/2']).acquire(limited),
      ];
      const since = performance.now();
      const reasons = await Promise.all(holds.map((hold) => aborted(hold.signal, since)));
      expect(reasons.every(({ reason }) => reason instanceof HoldLimitError)).toBe(true);
      // Each was withdrawn: another session is granted at once.
      const others = [
        await new ReadWriteLock(b, 'cfg').writeLock.acquire({ timeoutMs: 5_000 }),
        await new Semaphore(b, 'pool', { permits: 2 }).acquire({ count: 2, timeoutMs: 5_000 }),
        await new LeaderElection(b, 'leader', { id: 'b' }).campaign({ timeoutMs: 5_000 }),
        await new MultiLock(b, ['m/1', 'm/2']).acquire({ timeoutMs: 5_000 }),
      ];
      for (const name of ['cfg', 'pool', 'leader', 'm/1', 'm/2']) expect(await queueLength(b, name)).toBe(1);
      await Promise.all(others.map((other) => other.release()));
      // The limited holders' own release is a no-op now: idempotent.
      await Promise.all(holds.map((hold) => hold.release()));
    });

    it('refuses a maxHoldMs that is not a whole number of milliseconds from 1 to MAX_TIMEOUT_MS', async () => {
      const session: Session = await scope.open();
      const mutex = new FairMutex(session, 'jobs');
      for (const bad of [0, -1, 1.5, MAX_TIMEOUT_MS + 1, Number.NaN, '500'])
        await expect(mutex.acquire({ maxHoldMs: bad as number })).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(new Semaphore(session, 'pool', { permits: 1 }).acquire({ maxHoldMs: 0 })).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
      await expect(new LeaderElection(session, 'l', { id: 'x' }).campaign({ maxHoldMs: 0 })).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
      await expect(mutex.acquire({ maxHoldMS: 5 } as never)).rejects.toThrow(/did you mean "maxHoldMs"/);
      expect(await queueLength(session, 'jobs')).toBe(0);
    });
  });
}

holdLimitSuite(memoryFixture);
holdLimitSuite(() => zkFixture('zkStandalone'));
holdLimitSuite(() => etcdFixture('etcdStandalone'));
holdLimitSuite(postgresFixture);
holdLimitSuite(mysqlFixture);
holdLimitSuite(redisFixture);

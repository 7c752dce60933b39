import { describe, expect, it } from 'vitest';

import {
  ClosedError,
  InvalidArgumentError,
  InvalidNameError,
  LockLostError,
  LockTimeoutError,
  PermitsMismatchError,
  SessionLostError,
} from '../../recipes/errors.js';
import { FairMutex } from '../../recipes/mutex.js';
import { type PermitHandle, Semaphore } from '../../recipes/semaphore.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { useScope } from '../harness/backends/scope.js';
import { runCounting } from '../harness/contention/counting-contender.js';
import { CONTENTION_COUNTS, CONTENTION_WORKERS } from '../harness/contention/counts.js';
import { expectQueueLength, queueLength } from '../harness/internals.js';
import { eventually, later, track } from '../harness/wait.js';

/** The Semaphore contract, written once and run against every backend. */
export function semaphoreContract(getFixture: () => Fixture): void {
  describe(`Semaphore on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it(`never holds more than permits: ${CONTENTION_WORKERS} contenders x ${CONTENTION_COUNTS.semaphore} acquisitions of 1 or 2 of 3 permits, counted externally`, async () => {
      const fixture = scope.fixture;
      const checker = await runCounting({
        url: fixture.url(scope.namespace),
        options: fixture.options,
        mode: 'semaphore',
        name: 'pool',
        size: 3,
        workers: CONTENTION_WORKERS,
        count: CONTENTION_COUNTS.semaphore,
        crossProcess: fixture.crossProcess,
      });
      expect(checker.violations).toEqual([]);
      expect(checker.grants).toBe(CONTENTION_WORKERS * CONTENTION_COUNTS.semaphore);
      expect(checker.peak).toBe(3); // permits were shared, up to the limit
    }, 150_000);

    it('grants in FIFO order: a waiter asking for more than is free blocks the smaller asks behind it', async () => {
      const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
      const first = await new Semaphore(a, 'fifo', { permits: 2 }).acquire();
      const big = track(new Semaphore(b, 'fifo', { permits: 2 }).acquire({ count: 2 }));
      await expectQueueLength(a, 'fifo', 2);
      const small = track(new Semaphore(c, 'fifo', { permits: 2 }).acquire({ count: 1 }));
      await expectQueueLength(a, 'fifo', 3);
      expect(await new Semaphore(c, 'fifo', { permits: 2 }).tryAcquire()).toBeNull(); // one is free, but others wait
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect([big.settled, small.settled]).toEqual([false, false]);
      await first.release();
      const bigHeld = await big.promise;
      expect(bigHeld.count).toBe(2);
      expect(small.settled).toBe(false);
      await bigHeld.release();
      const smallHeld = await small.promise;
      expect(smallHeld.count).toBe(1);
      await smallHeld.release();
      await expectQueueLength(a, 'fifo', 0);
    });

    it('one release of several permits lets in every waiter that now fits, and withPermit releases', async () => {
      const sessions = [await scope.open(), await scope.open()];
      const all = await new Semaphore(sessions[0]!, 'many', { permits: 3 }).acquire({ count: 3 });
      expect(all.count).toBe(3);
      const waiters: ReturnType<typeof track<PermitHandle>>[] = [];
      for (let i = 0; i < 4; i += 1) {
        waiters.push(track(new Semaphore(sessions[i % 2]!, 'many', { permits: 3 }).acquire()));
        await expectQueueLength(sessions[0]!, 'many', i + 2);
      }
      await all.release();
      const granted = await Promise.all(waiters.slice(0, 3).map((waiter) => waiter.promise));
      await expectQueueLength(sessions[0]!, 'many', 4);
      expect(waiters[3]!.settled).toBe(false);
      await granted[0]!.release();
      await (await waiters[3]!.promise).release();
      await Promise.all(granted.map((permit) => permit.release()));
      const inside = await new Semaphore(sessions[1]!, 'many', { permits: 3 }).withPermit(
        async (permit) => {
          await expectQueueLength(sessions[0]!, 'many', 1);
          return permit.count;
        },
        { count: 2 },
      );
      expect(inside).toBe(2);
      await expectQueueLength(sessions[0]!, 'many', 0);
    });

    it('wakes only the waiters a release may let in: 50 waiters, a few notifications per grant (no herd)', async () => {
      const fixture = scope.fixture;
      const sessions = [await scope.open(), await scope.open()];
      const held = await new Semaphore(sessions[0]!, 'herd', { permits: 4 }).acquire({ count: 4 });
      const waiters: Promise<void>[] = [];
      for (let i = 0; i < 50; i += 1)
        waiters.push(new Semaphore(sessions[i % 2]!, 'herd', { permits: 4 }).withPermit(() => undefined));
      await expectQueueLength(sessions[0]!, 'herd', 51);
      // Each waiter watches one entry, except the first, which watches the holder ahead of it.
      await eventually(
        '50 waiters watching',
        async () => (await fixture.watched(scope.namespace)).filter((path) => !path.endsWith('/herd')).length === 50,
      );
      const before = fixture.notifications();
      await held.release();
      await Promise.all(waiters);
      // A herd (every waiter watching every holder) would wake each waiter at every release: ~50 per grant.
      const perGrant = (fixture.notifications() - before) / 50;
      expect(perGrant).toBeLessThanOrEqual(2);
    }, 60_000);

    it('rejects a timed-out or aborted waiter and withdraws its entry; creates nothing when already aborted', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new Semaphore(a, 'give-up', { permits: 2 }).acquire({ count: 2 });
      const semaphore = new Semaphore(b, 'give-up', { permits: 2 });
      const error = await semaphore.acquire({ timeoutMs: 50 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockTimeoutError);
      await expectQueueLength(a, 'give-up', 1);
      const controller = new AbortController();
      const waiting = later(semaphore.acquire({ signal: controller.signal }));
      await expectQueueLength(a, 'give-up', 2);
      const reason = new Error('caller gave up');
      controller.abort(reason);
      await expect(waiting).rejects.toBe(reason);
      await expectQueueLength(a, 'give-up', 1);
      await expect(semaphore.acquire({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
      await expect(semaphore.acquire({ timeoutMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
      const many = await Promise.allSettled(Array.from({ length: 30 }, () => semaphore.acquire({ timeoutMs: 100 })));
      expect(many.every((r) => r.status === 'rejected' && r.reason instanceof LockTimeoutError)).toBe(true);
      await expectQueueLength(a, 'give-up', 1);
      await held.release();
      await expectQueueLength(a, 'give-up', 0);
    }, 30_000);

    it('a waiter behind a granted waiter that gives up is still woken when permits free up', async () => {
      const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
      const held = await new Semaphore(a, 'chain', { permits: 2 }).acquire({ count: 2 });
      const controller = new AbortController();
      const second = later(new Semaphore(b, 'chain', { permits: 2 }).acquire({ count: 2, signal: controller.signal }));
      await expectQueueLength(a, 'chain', 2);
      const third = track(new Semaphore(c, 'chain', { permits: 2 }).acquire());
      await expectQueueLength(a, 'chain', 3);
      controller.abort(new Error('second gives up'));
      await expect(second).rejects.toThrow('second gives up');
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(third.settled).toBe(false);
      await held.release();
      await (await third.promise).release();
    });

    it('refuses other permits or another recipe on its name with PermitsMismatchError, leaving nothing behind', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new Semaphore(a, 'mismatch', { permits: 3 }).acquire();
      const error = await new Semaphore(b, 'mismatch', { permits: 2 }).acquire().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(PermitsMismatchError);
      expect(error).toMatchObject({ code: 'PERMITS_MISMATCH', permits: 2, found: 3 });
      expect((error as Error).message).toMatch(/permits 2.*permits 3/);
      await expect(new Semaphore(b, 'mismatch', { permits: 4 }).tryAcquire()).rejects.toBeInstanceOf(
        PermitsMismatchError,
      );
      await expectQueueLength(a, 'mismatch', 1);
      await held.release();
      const lock = await new FairMutex(a, 'mixed').acquire();
      await expect(new Semaphore(b, 'mixed', { permits: 2 }).acquire()).rejects.toMatchObject({ found: 'lock' });
      await expectQueueLength(a, 'mixed', 1);
      await lock.release();
    });

    it('rejects bad names, permits, counts and options with typed errors before touching the server', async () => {
      const a = await scope.open();
      expect(() => new Semaphore(a, 'a//b', { permits: 1 })).toThrow(InvalidNameError);
      const badPermits: unknown[] = [
        undefined,
        {},
        { permits: 0 },
        { permits: -1 },
        { permits: 1.5 },
        { permits: '2' },
        { permits: 2 ** 31 },
        { permits: 2, interop: 'kazoo' },
        { permit: 2 },
        3,
      ];
      for (const options of badPermits) {
        expect(() => new Semaphore(a, 'bad', options as { permits: number }), JSON.stringify(options)).toThrow(
          InvalidArgumentError,
        );
      }
      const semaphore = new Semaphore(a, 'bad', { permits: 2 });
      const badAcquire: unknown[] = [
        { count: 0 },
        { count: 3 },
        { count: 1.5 },
        { count: '1' },
        { timeoutMs: -1 },
        { signal: 'x' },
        { timout: 5 },
        'fast',
      ];
      for (const options of badAcquire) {
        await expect(semaphore.acquire(options as object), JSON.stringify(options)).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
      }
      await expect(semaphore.acquire({ count: 3 })).rejects.toThrow(/permits \(2\)/);
      await expect(semaphore.tryAcquire({ count: 3 })).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(semaphore.tryAcquire({ timeoutMs: 5 } as object)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(semaphore.withPermit('no' as never)).rejects.toBeInstanceOf(InvalidArgumentError);
      expect(await scope.fixture.entries(scope.namespace)).toEqual([]);
    });

    it('on session expiry aborts the holder, rejects its waiters, and the permits go to the next session', async () => {
      const fixture = scope.fixture;
      const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
      const held = await new Semaphore(a, 'expiry', { permits: 2 }).acquire({ count: 2 });
      const ownWaiter = new Semaphore(a, 'expiry', { permits: 2 }).acquire().catch((e: unknown) => e);
      const other = new Semaphore(b, 'expiry', { permits: 2 }).acquire({ count: 2 });
      await eventually('both queued', async () => (await queueLength(c, 'expiry')) === 3);
      await fixture.expire(a);
      await eventually('holder signal aborted', () => held.signal.aborted, fixture.lossDeadlineMs);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect(await ownWaiter).toBeInstanceOf(SessionLostError);
      const next = await other;
      expect(next.count).toBe(2);
      await held.release();
      await next.release();
    });

    it("close() withdraws waiters and aborts holders' signals", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new Semaphore(a, 'close', { permits: 1 }).acquire();
      const waiter = new Semaphore(a, 'close', { permits: 1 }).acquire().catch((e: unknown) => e);
      await expectQueueLength(b, 'close', 2);
      await a.close();
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect(await waiter).toBeInstanceOf(ClosedError);
      await expectQueueLength(b, 'close', 0);
      expect(() => new Semaphore(a, 'close', { permits: 1 })).toThrow(ClosedError);
    });
  });
}

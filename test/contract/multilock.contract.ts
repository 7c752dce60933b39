import { describe, expect, it } from 'vitest';

import {
  InvalidArgumentError,
  InvalidNameError,
  LockLostError,
  LockTimeoutError,
  SessionLostError,
} from '../../recipes/errors.js';
import { MultiLock } from '../../recipes/multilock.js';
import { FairMutex } from '../../recipes/mutex.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { useScope } from '../harness/backends/scope.js';
import { runCounting } from '../harness/contention/counting-contender.js';
import { CONTENTION_COUNTS, CONTENTION_WORKERS } from '../harness/contention/counts.js';
import { backendOf, expectQueueLength } from '../harness/internals.js';
import { eventually, later, track } from '../harness/wait.js';

/** The MultiLock contract, written once and run against every backend. */
export function multiLockContract(getFixture: () => Fixture): void {
  describe(`MultiLock on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it(`${CONTENTION_WORKERS} contenders x ${CONTENTION_COUNTS.multiLock} random two-account transfers in both directions: no deadlock, no overlap`, async () => {
      const fixture = scope.fixture;
      const checker = await runCounting({
        url: fixture.url(scope.namespace),
        options: fixture.options,
        mode: 'multilock',
        name: 'accounts',
        size: 4,
        workers: CONTENTION_WORKERS,
        count: CONTENTION_COUNTS.multiLock,
        crossProcess: fixture.crossProcess,
      });
      expect(checker.violations).toEqual([]);
      expect(checker.grants).toBe(CONTENTION_WORKERS * CONTENTION_COUNTS.multiLock);
    }, 150_000);

    it('takes the names in one sorted order, hands out a token per lock, and releases all, idempotently', async () => {
      const a = await scope.open();
      const multi = new MultiLock(a, ['b', 'a/x', 'c']);
      expect(multi.names).toEqual(['a/x', 'b', 'c']);
      const held = await multi.acquire();
      expect([...held.fencingTokens.keys()]).toEqual(['a/x', 'b', 'c']);
      for (const name of multi.names) {
        expect(held.fencingTokens.get(name)).toBe((await backendOf(a).list(name))[0]!.fencingToken);
      }
      expect(held.held).toBe(true);
      expect(await new MultiLock(a, ['c', 'd']).tryAcquire()).toBeNull();
      await expectQueueLength(a, 'd', 0); // the free lock taken on the way was given back
      await Promise.all([held.release(), held.release()]);
      await held.release();
      expect(held.held).toBe(false);
      for (const name of multi.names) await expectQueueLength(a, name, 0);
      const result = await multi.withLock((locks) => locks.names.length);
      expect(result).toBe(3);
    });

    it('waits for a lock held by a single FairMutex, and is granted once it goes', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const single = await new FairMutex(a, 'acct/2').acquire();
      const multi = track(new MultiLock(b, ['acct/2', 'acct/1']).acquire());
      await expectQueueLength(a, 'acct/2', 2);
      await expectQueueLength(a, 'acct/1', 1); // the first name in order is held meanwhile
      expect(multi.settled).toBe(false);
      await single.release();
      const held = await multi.promise;
      await held.release();
    });

    it('on a timeout or an abort part-way withdraws every entry it had queued or held', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const blocker = await new FairMutex(a, 'z').acquire();
      const error = await new MultiLock(b, ['z', 'y', 'x']).acquire({ timeoutMs: 100 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockTimeoutError);
      expect((error as LockTimeoutError).timeoutMs).toBe(100);
      expect((error as Error).message).toContain('multi-lock ["x", "y", "z"]');
      for (const [name, length] of [
        ['x', 0],
        ['y', 0],
        ['z', 1],
      ] as const)
        await expectQueueLength(a, name, length);
      const controller = new AbortController();
      const waiting = later(new MultiLock(b, ['x', 'z']).acquire({ signal: controller.signal }));
      await expectQueueLength(a, 'z', 2);
      const reason = new Error('caller gave up');
      controller.abort(reason);
      await expect(waiting).rejects.toBe(reason);
      for (const [name, length] of [
        ['x', 0],
        ['z', 1],
      ] as const)
        await expectQueueLength(a, name, length);
      await expect(new MultiLock(b, ['x']).acquire({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
      await blocker.release();
    });

    it('rejects empty, duplicate and bad names and options with typed errors before touching the server', async () => {
      const a = await scope.open();
      for (const names of [[], ['a', 'b', 'a'], 'a', undefined, [1]] as unknown[]) {
        expect(() => new MultiLock(a, names as string[]), JSON.stringify(names)).toThrow(
          names instanceof Array && names[0] === 1 ? InvalidNameError : InvalidArgumentError,
        );
      }
      expect(() => new MultiLock(a, ['a', 'a'])).toThrow(/"a" appears twice/);
      expect(() => new MultiLock(a, ['a', 'b//c'])).toThrow(InvalidNameError);
      expect(() => new MultiLock(a, ['a'], { interop: 'zookeeper' } as never)).toThrow(InvalidArgumentError);
      const multi = new MultiLock(a, ['a', 'b']);
      for (const options of [{ timeoutMs: -1 }, { timout: 5 }, 'x'] as unknown[]) {
        await expect(multi.acquire(options as object)).rejects.toBeInstanceOf(InvalidArgumentError);
      }
      await expect(multi.withLock('no' as never)).rejects.toBeInstanceOf(InvalidArgumentError);
      expect(await scope.fixture.entries(scope.namespace)).toEqual([]);
    });

    it('its one signal aborts when any lock is lost with the session; its waiters are rejected', async () => {
      const fixture = scope.fixture;
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new MultiLock(a, ['p', 'q']).acquire();
      const signal = held.signal;
      const ownWaiter = new MultiLock(a, ['q', 'r']).acquire().catch((e: unknown) => e);
      const other = later(new MultiLock(b, ['p', 'q']).acquire());
      await expectQueueLength(b, 'q', 2);
      await fixture.expire(a);
      await eventually('signal aborted', () => signal.aborted, fixture.lossDeadlineMs);
      expect(signal.reason).toBeInstanceOf(LockLostError);
      expect(held.held).toBe(false);
      expect(await ownWaiter).toBeInstanceOf(SessionLostError);
      await held.release();
      await (await other).release();
      await expectQueueLength(b, 'r', 0);
    });
  });
}

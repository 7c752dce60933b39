import { connect } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import type { Session } from '../../recipes/contract.js';
import {
  ClosedError,
  InvalidArgumentError,
  InvalidNameError,
  LockLostError,
  LockTimeoutError,
  SessionLostError,
} from '../../recipes/errors.js';
import { FairMutex } from '../../recipes/mutex.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { useScope } from '../harness/backends/scope.js';
import { CONTENTION_COUNTS, CONTENTION_WORKERS } from '../harness/contention/counts.js';
import { runContention } from '../harness/contention/run-contention.js';
import { backendOf, entryOf, expectQueueLength, queueLength } from '../harness/internals.js';
import { eventually, later, track } from '../harness/wait.js';

/** The FairMutex contract, written once and run against every backend. */
export function mutexContract(getFixture: () => Fixture): void {
  describe(`FairMutex on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it('grants 12 waiters in exactly the order they queued, with increasing fencing tokens', async () => {
      const sessions = [await scope.open(), await scope.open(), await scope.open()];
      const first = await new FairMutex(sessions[0]!, 'fifo').acquire();
      const granted: { index: number; token: bigint }[] = [];
      const waits: Promise<void>[] = [];
      for (let index = 0; index < 12; index += 1) {
        const session = sessions[index % 3]!;
        waits.push(
          later(
            new FairMutex(session, 'fifo').acquire().then(async (lock) => {
              granted.push({ index, token: lock.fencingToken });
              await lock.release();
            }),
          ),
        );
        await eventually(`waiter ${index} queued`, async () => (await queueLength(session, 'fifo')) === index + 2);
      }
      await first.release();
      await Promise.all(waits);
      expect(granted.map((g) => g.index)).toEqual([...Array(12).keys()]);
      const tokens = [first.fencingToken, ...granted.map((g) => g.token)];
      for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]! > tokens[i - 1]!).toBe(true);
    });

    it(`keeps mutual exclusion under contention: ${CONTENTION_WORKERS} contenders x ${CONTENTION_COUNTS.mutex} acquisitions, checked externally`, async () => {
      const fixture = scope.fixture;
      const checker = await runContention({
        url: fixture.url(scope.namespace),
        options: fixture.options,
        name: 'contended',
        workers: CONTENTION_WORKERS,
        count: CONTENTION_COUNTS.mutex,
        crossProcess: fixture.crossProcess,
      });
      expect(checker.violations).toEqual([]);
      expect(checker.grants).toBe(CONTENTION_WORKERS * CONTENTION_COUNTS.mutex);
    }, 120_000);

    it('rejects a timed-out waiter with LockTimeoutError and withdraws its entry', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'timeout').acquire();
      const error = await new FairMutex(b, 'timeout').acquire({ timeoutMs: 50 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockTimeoutError);
      expect((error as LockTimeoutError).code).toBe('LOCK_TIMEOUT');
      await expectQueueLength(a, 'timeout', 1);
      await held.release();
    });

    it('leaves 0 entries after 200 timed-out waiters', async () => {
      const sessions = [await scope.open(), await scope.open(), await scope.open()];
      const held = await new FairMutex(sessions[0]!, 'many').acquire();
      const results = await Promise.allSettled(
        Array.from({ length: 200 }, (_, i) => new FairMutex(sessions[i % 3]!, 'many').acquire({ timeoutMs: 200 })),
      );
      expect(results.every((r) => r.status === 'rejected' && r.reason instanceof LockTimeoutError)).toBe(true);
      await expectQueueLength(sessions[1]!, 'many', 1);
      await held.release();
      await expectQueueLength(sessions[1]!, 'many', 0);
    }, 60_000);

    it('rejects an aborted waiter with signal.reason and withdraws its entry', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'abort').acquire();
      const controller = new AbortController();
      const waiting = new FairMutex(b, 'abort').acquire({ signal: controller.signal });
      await eventually('waiter queued', async () => (await queueLength(a, 'abort')) === 2);
      const reason = new Error('caller gave up');
      controller.abort(reason);
      await expect(waiting).rejects.toBe(reason);
      await expectQueueLength(a, 'abort', 1);
      await held.release();
    });

    it('rejects at once, creating nothing, when the signal is already aborted or the timeout is 0 and the lock is held', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const reason = new Error('already aborted');
      await expect(new FairMutex(b, 'pre').acquire({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
      await expectQueueLength(a, 'pre', 0);
      const held = await new FairMutex(a, 'pre').acquire({ timeoutMs: 0 });
      await expect(new FairMutex(b, 'pre').acquire({ timeoutMs: 0 })).rejects.toBeInstanceOf(LockTimeoutError);
      await expectQueueLength(a, 'pre', 1);
      await held.release();
    });

    it('tryAcquire never waits; release is idempotent; a released lock goes to the next waiter', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const mutexA = new FairMutex(a, 'try');
      const mutexB = new FairMutex(b, 'try');
      const held = await mutexA.tryAcquire();
      expect(held).not.toBeNull();
      expect(await mutexB.tryAcquire()).toBeNull();
      await expectQueueLength(a, 'try', 1);
      const next = track(mutexB.acquire());
      await eventually('waiter queued', async () => (await queueLength(a, 'try')) === 2);
      expect(next.settled).toBe(false);
      await Promise.all([held!.release(), held!.release()]);
      await held!.release();
      expect(held!.held).toBe(false);
      const lock = await next.promise;
      expect(lock.fencingToken > held!.fencingToken).toBe(true);
      await lock.release();
      await lock.release();
      await expectQueueLength(a, 'try', 0);
    });

    it('a tryAcquire whose session closes while its request is on the way gives null, tells failed, and leaves no entry', async () => {
      const [a, observer] = [await scope.open(), await scope.open()];
      const told: string[] = [];
      a.on('lock', (event) => void told.push(event.type));
      const trying = new FairMutex(a, 'try-closing').tryAcquire(); // its enqueue is sent before this returns
      const closing = a.close();
      expect(await trying).toBeNull();
      await closing;
      expect(told).toEqual(['requested', 'failed']);
      await expectQueueLength(observer, 'try-closing', 0);
    });

    it('one session can hold a mutex only once at a time: a second acquire on it waits like any other', async () => {
      const a = await scope.open();
      const mutex = new FairMutex(a, 'same-session');
      const first = await mutex.acquire();
      expect(await mutex.tryAcquire()).toBeNull();
      const second = track(mutex.acquire());
      await eventually('second queued', async () => (await queueLength(a, 'same-session')) === 2);
      expect(second.settled).toBe(false);
      await first.release();
      await (await second.promise).release();
    });

    it('withLock runs the function while holding and releases afterwards, also when it throws', async () => {
      const a = await scope.open();
      const mutex = new FairMutex(a, 'with');
      const token = await mutex.withLock(async (lock) => {
        await expectQueueLength(a, 'with', 1);
        return lock.fencingToken;
      });
      expect(typeof token).toBe('bigint');
      const failure = new Error('inside');
      await expect(mutex.withLock(() => Promise.reject(failure))).rejects.toBe(failure);
      await expectQueueLength(a, 'with', 0);
    });

    it('wakes exactly one waiter per release with 50 queued (no herd)', async () => {
      const fixture = scope.fixture;
      const sessions = [await scope.open(), await scope.open()];
      const held = await new FairMutex(sessions[0]!, 'herd').acquire();
      // Calls on two connections reach the server in any order; each waiter releases as soon as granted.
      const waiters: Promise<void>[] = [];
      for (let i = 0; i < 50; i += 1) {
        waiters.push(new FairMutex(sessions[i % 2]!, 'herd').withLock(() => undefined));
      }
      // Watches on entries (on ZooKeeper a session may also keep one on the directory it found quiet).
      await eventually(
        '50 waiters watching',
        async () => (await fixture.watched(scope.namespace)).filter((path) => !path.endsWith('/herd')).length === 50,
      );
      const before = fixture.notifications();
      await held.release();
      await Promise.all(waiters);
      expect(fixture.notifications() - before).toBe(50);
    }, 60_000);

    it('a waiter whose predecessor withdrew keeps waiting for the holder ahead of it', async () => {
      const fixture = scope.fixture;
      const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
      const holderA = await new FairMutex(a, 'shortcut').acquire();
      const controller = new AbortController();
      const waitB = new FairMutex(b, 'shortcut').acquire({ signal: controller.signal });
      await eventually('B queued', async () => (await queueLength(a, 'shortcut')) === 2);
      const waitC = track(new FairMutex(c, 'shortcut').acquire());
      await eventually('C queued', async () => (await queueLength(a, 'shortcut')) === 3);
      const [keyA, keyB] = (await backendOf(a).list('shortcut')).map((e) => e.key);
      await eventually('C watching B', async () => (await fixture.watched(scope.namespace)).includes(keyB!));
      controller.abort(new Error('B gives up'));
      await expect(waitB).rejects.toThrow('B gives up');
      // C notices B's departure, lists again and watches A.
      await eventually('C watching A', async () => (await fixture.watched(scope.namespace)).includes(keyA!));
      expect(waitC.settled).toBe(false);
      await holderA.release();
      await (await waitC.promise).release();
    });

    it('tells a holder whose entry another client deleted, while its session lives on', async () => {
      const holder = await scope.open();
      const held = await new FairMutex(holder, 'deleted').acquire();
      await scope.fixture.removeEntry(entryOf(held).key);
      await eventually('holder told', () => held.signal.aborted, scope.fixture.lossDeadlineMs);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect(held.held).toBe(false);
      expect(holder.state).toBe('connected');
      await held.release();
    });

    it.each(['requeue', 'fail'] as const)(
      "a waiter whose entry another client deleted: onWaiterLost '%s' ('requeue' is the default)",
      async (policy) => {
        const [holder, waiter] = [
          await scope.open(),
          await scope.open(policy === 'fail' ? { onWaiterLost: 'fail' } : {}),
        ];
        const held = await new FairMutex(holder, 'vanished').acquire();
        const waiting = later(new FairMutex(waiter, 'vanished').acquire({ timeoutMs: 20_000 }));
        await expectQueueLength(holder, 'vanished', 2);
        const [, deleted] = await backendOf(holder).list('vanished');
        // Read first: a ZooKeeper listing has no entry's own stat, so another session's token is known once read.
        await backendOf(holder).read(deleted!);
        await scope.fixture.removeEntry(deleted!.key);
        await held.release();
        if (policy === 'fail') {
          await expect(waiting).rejects.toBeInstanceOf(LockLostError);
          await expectQueueLength(holder, 'vanished', 0);
          return;
        }
        const lock = await waiting; // queued again, behind the deleted place
        expect(lock.fencingToken > deleted!.fencingToken).toBe(true);
        await expectQueueLength(holder, 'vanished', 1);
        await lock.release();
      },
    );

    it('rejects bad names and options with typed errors before touching the server', async () => {
      const a = await scope.open();
      const badNames: unknown[] = [
        '',
        '.',
        '..',
        'a//b',
        'a/',
        '/a',
        'a/./b',
        'a b',
        'a\u0000b',
        'é',
        'x'.repeat(257),
        '_c_x',
        'a/_c_1-lock-0000000001',
        42,
        null,
        undefined,
        {},
      ];
      for (const name of badNames) {
        expect(() => new FairMutex(a, name as string), `name ${String(name)}`).toThrow(InvalidNameError);
      }
      const mutex = new FairMutex(a, 'options');
      const badOptions: unknown[] = [
        { timeoutMs: -1 },
        { timeoutMs: Number.NaN },
        { timeoutMs: Infinity },
        { timeoutMs: '5' },
        { timeoutMs: 2 ** 31 },
        { signal: 'x' },
        'fast',
        7,
      ];
      for (const options of badOptions) {
        await expect(mutex.acquire(options as object), JSON.stringify(options)).rejects.toBeInstanceOf(
          InvalidArgumentError,
        );
      }
      await expect(mutex.withLock('not a function' as never)).rejects.toBeInstanceOf(InvalidArgumentError);
      expect(() => new FairMutex({} as Session, 'x')).toThrow(InvalidArgumentError);
      expect(await scope.fixture.entries(scope.namespace)).toEqual([]);
      await expectQueueLength(a, 'options', 0);
    });

    it('on session expiry aborts the holder with LockLostError, rejects its waiters, and the next session gets the lock', async () => {
      const fixture = scope.fixture;
      const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'expiry').acquire();
      const ownWaiter = new FairMutex(a, 'expiry').acquire().catch((e: unknown) => e);
      const other = new FairMutex(b, 'expiry').acquire();
      await eventually('both queued', async () => (await queueLength(c, 'expiry')) === 3);
      const states: string[] = [];
      a.on('state', (state) => states.push(state));
      await fixture.expire(a);
      await eventually('holder signal aborted', () => held.signal.aborted, fixture.lossDeadlineMs);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect(await ownWaiter).toBeInstanceOf(SessionLostError);
      expect(a.state).toBe('lost');
      expect(states).toContain('lost');
      const next = await other;
      expect(next.fencingToken > held.fencingToken).toBe(true);
      await held.release(); // idempotent and harmless after loss
      expect(() => new FairMutex(a, 'expiry')).toThrow(SessionLostError); // no recipe is made on a lost session
      await next.release();
    });

    it('reconnectAfterLoss opens a new session after a loss; holds stay lost and are taken again on it', async () => {
      const fixture = scope.fixture;
      const session = await connect(fixture.url(scope.namespace), { ...fixture.options, reconnectAfterLoss: true });
      let next: Session | undefined;
      session.on('replaced', (replacement) => (next = replacement));
      try {
        const held = await new FairMutex(session, 'replace').acquire();
        await fixture.expire(session);
        await eventually('a replacement session', () => next !== undefined, fixture.lossDeadlineMs * 3);
        expect(held.signal.reason).toBeInstanceOf(LockLostError);
        expect(session.state).toBe('lost');
        expect(next!.state).toBe('connected');
        expect(next!.id).not.toBe(session.id);
        const again = await new FairMutex(next!, 'replace').acquire();
        expect(again.fencingToken > held.fencingToken).toBe(true);
        await again.release();
      } finally {
        await next?.close();
        await session.close();
      }
    });

    it("close() withdraws waiters, releases holds and aborts the holders' signals", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'close').acquire();
      const waiter = new FairMutex(a, 'close').acquire().catch((e: unknown) => e);
      const other = new FairMutex(b, 'close').acquire();
      await eventually('queued', async () => (await queueLength(b, 'close')) === 3);
      await a.close();
      expect(a.state).toBe('closed');
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect(await waiter).toBeInstanceOf(ClosedError);
      const lock = await other;
      await expectQueueLength(b, 'close', 1);
      expect(() => new FairMutex(a, 'close')).toThrow(ClosedError); // nor on a closed one
      await lock.release();
    });
  });
}

import { describe, expect, it, vi } from 'vitest';

import type { Backend } from '../../recipes/contract.js';
import { LockLostError, LockTimeoutError, LockUpgradeError, NotHeldError } from '../../recipes/errors.js';
import { FairMutex } from '../../recipes/mutex.js';
import { Reentrant } from '../../recipes/reentrant.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { useScope } from '../harness/backends/scope.js';
import { backendOf } from '../harness/internals.js';
import { eventually, later } from '../harness/wait.js';

/** The Reentrant contract, written once and run against every backend. */
export function reentrantContract(getFixture: () => Fixture): void {
  describe(`Reentrant on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it('re-enters in the same context without a server request, with the same fencing token', async () => {
      const session = await scope.open();
      const re = new Reentrant(new FairMutex(session, 'nested'));
      const backend = backendOf(session);
      // An enqueue at the tail may be either call (`enqueueAhead` where the backend has it).
      const enqueues: { mock: { calls: unknown[] }; mockRestore(): void }[] = [vi.spyOn(backend, 'enqueue')];
      if (backend.enqueueAhead !== undefined) enqueues.push(vi.spyOn(backend as Required<Backend>, 'enqueueAhead'));
      const tokens: bigint[] = [];
      await re.withLock(async (outer) => {
        tokens.push(outer.fencingToken);
        expect(re.holdCount).toBe(1);
        await re.withLock(async (inner) => {
          tokens.push(inner.fencingToken);
          expect(re.holdCount).toBe(2);
          await re.withLock(async (innermost) => {
            tokens.push(innermost.fencingToken);
            expect(re.holdCount).toBe(3);
          });
        });
        expect(re.holdCount).toBe(1);
      });
      expect(enqueues.reduce((calls, spy) => calls + spy.mock.calls.length, 0)).toBe(1);
      expect(new Set(tokens).size).toBe(1);
      expect(re.holdCount).toBe(0);
      expect(await backendOf(session).list('nested')).toEqual([]);
      for (const spy of enqueues) spy.mockRestore();
    });

    it('keeps two contexts of one process mutually exclusive', async () => {
      const session = await scope.open();
      const re = new Reentrant(new FairMutex(session, 'contexts'));
      let inside = 0;
      let overlap = false;
      const work = (): Promise<void> =>
        re.withLock(async () => {
          inside += 1;
          overlap ||= inside > 1;
          await re.withLock(() => new Promise((resolve) => setTimeout(resolve, 5)));
          inside -= 1;
        });
      await Promise.all([work(), work(), work(), work()]);
      expect(overlap).toBe(false);
    });

    it('refuses more releases than acquires with NotHeldError', async () => {
      const session = await scope.open();
      const re = new Reentrant(new FairMutex(session, 'levels'));
      const owner = Symbol('job');
      const outer = await re.acquire({ owner });
      const inner = await re.acquire({ owner });
      expect(re.holdCountOf(owner)).toBe(2);
      await inner.release();
      await inner.release(); // the same level twice is harmless
      expect(re.holdCountOf(owner)).toBe(1);
      await re.release({ owner });
      expect(re.holdCountOf(owner)).toBe(0);
      await expect(re.release({ owner })).rejects.toBeInstanceOf(NotHeldError);
      // Two acquires, two releases already (one by handle, one by owner): a third is one too many.
      await expect(outer.release()).rejects.toBeInstanceOf(NotHeldError);
      expect(await backendOf(session).list('levels')).toEqual([]);
    });

    it('leaves the outer hold intact when an inner acquire is aborted or times out', async () => {
      const session = await scope.open();
      const re = new Reentrant(new FairMutex(session, 'inner-abort'));
      await re.withLock(async (outer) => {
        const reason = new Error('inner gave up');
        await expect(re.acquire({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
        const inner = await re.acquire({ timeoutMs: 0 });
        await inner.release();
        expect(re.holdCount).toBe(1);
        expect(outer.signal.aborted).toBe(false);
        expect(await backendOf(session).list('inner-abort')).toHaveLength(1);
      });
    });

    it('takes one level for two releases of one handle at once: the outer level still holds', async () => {
      const [session, other] = [await scope.open(), await scope.open()];
      const re = new Reentrant(new FairMutex(session, 'twice'));
      const outer = await re.acquire({ owner: 'job' });
      const inner = await re.acquire({ owner: 'job' });
      expect([outer.name, outer.held, inner.held]).toEqual(['twice', true, true]);
      await Promise.all([inner.release(), inner.release()]);
      expect(re.holdCountOf('job')).toBe(1);
      expect(outer.signal.aborted).toBe(false);
      expect([outer.held, inner.held]).toEqual([true, false]);
      expect(await new FairMutex(other, 'twice').tryAcquire()).toBeNull();
      await outer.release();
      expect(re.holdCountOf('job')).toBe(0);
      expect(outer.held).toBe(false);
    });

    it("keeps its own timeout and signal while joining the same owner's acquire in flight", async () => {
      const [session, other] = [await scope.open(), await scope.open()];
      const held = await new FairMutex(other, 'join').acquire();
      const re = new Reentrant(new FairMutex(session, 'join'));
      const first = later(re.acquire({ owner: 'job' }));
      await expect(re.acquire({ owner: 'job', timeoutMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
      const abort = new AbortController();
      const aborted = later(re.acquire({ owner: 'job', signal: abort.signal }));
      abort.abort(new Error('gave up'));
      await expect(aborted).rejects.toThrow('gave up');
      await held.release();
      const lock = await first;
      expect(re.holdCountOf('job')).toBe(1);
      await lock.release();
    });

    it('ends the hold at every nesting level at once when the session is lost', async () => {
      const fixture = scope.fixture;
      const session = await scope.open();
      const re = new Reentrant(new FairMutex(session, 'lost'));
      const owner = Symbol('job');
      const outer = await re.acquire({ owner });
      const inner = await re.acquire({ owner });
      expect(inner.signal).toBe(outer.signal);
      await fixture.expire(session);
      await eventually('hold lost', () => outer.signal.aborted, fixture.lossDeadlineMs);
      expect(inner.signal.reason).toBeInstanceOf(LockLostError);
      await inner.release();
      await outer.release();
    });

    it("tells owners apart around both halves of one ReadWriteLock: one owner's write keeps another's read out, another's read does not refuse a write", async () => {
      const session = await scope.open();
      const rw = new ReadWriteLock(session, 'halves');
      const reads = new Reentrant(rw.readLock);
      const writes = new Reentrant(rw.writeLock);
      const writer = Symbol('writer');
      const reader = Symbol('reader');
      const write = await writes.acquire({ owner: writer });
      // Another owner's read queues behind the write instead of taking its place.
      await expect(reads.acquire({ owner: reader, timeoutMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
      // The write's own owner reads at once, at the write's place.
      const ownRead = await reads.acquire({ owner: writer, timeoutMs: 0 });
      expect(ownRead.fencingToken).toBe(write.fencingToken);
      await ownRead.release();
      await write.release();
      // Another owner's held read makes a write wait for it, not fail as an upgrade.
      const read = await reads.acquire({ owner: reader });
      const waiting = later(writes.acquire({ owner: writer, timeoutMs: 20_000 }));
      await eventually('writer queued', async () => (await backendOf(session).list('halves')).length === 2);
      await read.release();
      await (await waiting).release();
      // The same owner asking for the write while holding a read is an upgrade, refused.
      const held = await reads.acquire({ owner: reader });
      await expect(writes.acquire({ owner: reader, timeoutMs: 50 })).rejects.toBeInstanceOf(LockUpgradeError);
      await held.release();
    });

    it("nests across the halves of one ReadWriteLock: a read inside a write is the same owner's, at once; a write inside a read is an upgrade", async () => {
      const session = await scope.open();
      const rw = new ReadWriteLock(session, 'nest-halves');
      const reads = new Reentrant(rw.readLock);
      const writes = new Reentrant(rw.writeLock);
      await writes.withLock(async (write) => {
        await reads.withLock(
          async (read) => {
            expect(read.fencingToken).toBe(write.fencingToken); // placed at the write
          },
          { timeoutMs: 0 },
        );
      });
      await reads.withLock(async () => {
        await expect(writes.withLock(() => undefined, { timeoutMs: 5_000 })).rejects.toBeInstanceOf(LockUpgradeError);
      });
      expect(await backendOf(session).list('nest-halves')).toEqual([]);
    });

    it('wraps a read and a write lock: nested reads re-enter, writers still exclude', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const reads = new Reentrant(new ReadWriteLock(a, 'rw').readLock);
      const writes = new Reentrant(new ReadWriteLock(b, 'rw').writeLock);
      await reads.withLock(async () => {
        await reads.withLock(async () => {
          expect(reads.holdCount).toBe(2);
          await expect(writes.acquire({ timeoutMs: 50 })).rejects.toThrow(/timed out/);
        });
      });
      await writes.withLock(async () => {
        await writes.withLock(() => expect(writes.holdCount).toBe(2));
      });
    });
  });
}

import { describe, expect, it, vi } from 'vitest';

import type { Session } from '../../recipes/contract.js';
import { BackendError, InvalidArgumentError, LockLostError, LockUpgradeError } from '../../recipes/errors.js';
import type { LockHandle } from '../../recipes/handle.js';
import { FairMutex } from '../../recipes/mutex.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { useScope } from '../harness/backends/scope.js';
import { CONTENTION_COUNTS, CONTENTION_WORKERS } from '../harness/contention/counts.js';
import { runContention } from '../harness/contention/run-contention.js';
import { backendOf, entryOf } from '../harness/internals.js';
import { eventually, later, rethrowFailure, track } from '../harness/wait.js';

async function queue(session: Session, name: string): Promise<{ key: string; kind: string; order: bigint }[]> {
  return [...(await backendOf(session).list(name))];
}

/** The ReadWriteLock contract, written once and run against every backend. */
export function rwContract(getFixture: () => Fixture): void {
  describe(`ReadWriteLock on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);
    const watched = (): Promise<string[]> => scope.fixture.watched(scope.namespace);

    it('lets 5 readers hold at once; a writer waits for the last of them', async () => {
      const sessions = [await scope.open(), await scope.open()];
      const readers: LockHandle[] = [];
      for (let i = 0; i < 5; i += 1)
        readers.push(await new ReadWriteLock(sessions[i % 2]!, 'share').readLock.acquire({ timeoutMs: 5_000 }));
      expect(readers.every((r) => r.held)).toBe(true);
      const writer = track(new ReadWriteLock(sessions[0]!, 'share').writeLock.acquire());
      await eventually('writer queued', async () => (await queue(sessions[0]!, 'share')).length === 6);
      const keys = (await queue(sessions[0]!, 'share')).map((e) => e.key);
      await eventually('writer watching the last reader', async () => (await watched()).includes(keys[4]!));
      await readers[4]!.release();
      // The writer notices, lists again, and waits for the reader now before it.
      await eventually('writer watching reader 4', async () => (await watched()).includes(keys[3]!));
      expect(writer.settled).toBe(false);
      for (const reader of readers.slice(0, 4)) await reader.release();
      await (await writer.promise).release();
    });

    it('makes a reader queued behind a writer wait for that writer (no writer starvation)', async () => {
      const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
      const first = await new ReadWriteLock(a, 'fair').readLock.acquire();
      const writer = track(new ReadWriteLock(b, 'fair').writeLock.acquire());
      await eventually('writer queued', async () => (await queue(a, 'fair')).length === 2);
      const late = track(new ReadWriteLock(c, 'fair').readLock.acquire());
      await eventually('late reader queued', async () => (await queue(a, 'fair')).length === 3);
      const writerKey = (await queue(a, 'fair'))[1]!.key;
      await eventually('late reader watching the writer', async () => (await watched()).includes(writerKey));
      expect(late.settled).toBe(false);
      await first.release();
      const w = await writer.promise;
      expect(late.settled).toBe(false);
      await w.release();
      await (await late.promise).release();
    });

    it('grants writers one at a time, in the order they queued', async () => {
      const sessions = [await scope.open(), await scope.open(), await scope.open()];
      const first = await new ReadWriteLock(sessions[0]!, 'writers').writeLock.acquire();
      const order: number[] = [];
      const waits: Promise<void>[] = [];
      let inside = 0;
      for (let i = 0; i < 6; i += 1) {
        const session = sessions[i % 3]!;
        waits.push(
          later(
            new ReadWriteLock(session, 'writers').writeLock.withLock(async () => {
              inside += 1;
              expect(inside).toBe(1);
              order.push(i);
              await new Promise((resolve) => setImmediate(resolve));
              inside -= 1;
            }),
          ),
        );
        await eventually(`writer ${i} queued`, async () => (await queue(session, 'writers')).length === i + 2);
      }
      await first.release();
      await Promise.all(waits);
      expect(order).toEqual([0, 1, 2, 3, 4, 5]);
    });

    it(`keeps readers and writers apart under contention, downgrades included: ${CONTENTION_WORKERS} contenders x ${CONTENTION_COUNTS.readWrite}, checked externally`, async () => {
      const fixture = scope.fixture;
      const checker = await runContention({
        url: fixture.url(scope.namespace),
        options: fixture.options,
        mode: 'rw',
        name: 'mixed',
        workers: CONTENTION_WORKERS,
        count: CONTENTION_COUNTS.readWrite,
        crossProcess: fixture.crossProcess,
      });
      expect(checker.violations).toEqual([]);
      expect(checker.grants).toBe(CONTENTION_WORKERS * CONTENTION_COUNTS.readWrite);
      expect(checker.downgrades).toBe((CONTENTION_WORKERS * CONTENTION_COUNTS.readWrite) / 6); // every sixth acquisition of each worker
      expect(checker.sharedAtOnce).toBeGreaterThan(1);
    }, 120_000);

    it('keeps readers out while a FairMutex of the same name holds', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const mutex = await new FairMutex(a, 'mixed-recipes').acquire();
      expect(await new ReadWriteLock(b, 'mixed-recipes').readLock.tryAcquire()).toBeNull();
      await mutex.release();
      const read = await new ReadWriteLock(b, 'mixed-recipes').readLock.tryAcquire();
      expect(read).not.toBeNull();
      await read!.release();
    });

    it('refuses a downgrade from a write lock whose entry is already gone, and the writer granted after it stays alone', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const owner = new ReadWriteLock(a, 'gone');
      const write = await owner.writeLock.acquire();
      const next = later(new ReadWriteLock(b, 'gone').writeLock.acquire({ timeoutMs: 20_000 }));
      await eventually('writer queued', async () => (await queue(a, 'gone')).length === 2);
      await scope.fixture.removeEntry(entryOf(write).key); // deleted by another client or an operator
      const granted = await next;
      const refused = await owner.downgrade(write).then(
        () => undefined,
        (error: unknown) => error,
      );
      expect(refused instanceof LockLostError || refused instanceof InvalidArgumentError).toBe(true);
      await eventually(
        'only the granted writer is queued',
        async () => (await queue(b, 'gone')).map((e) => e.key).join() === entryOf(granted).key,
      );
      await granted.release();
      await write.release();
    });

    it('refuses a tryAcquire of the read lock placed at a write lock whose entry is gone, and the writer granted after it stays alone', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const owner = new ReadWriteLock(a, 'gone-try');
      const write = await owner.writeLock.acquire();
      const next = later(new ReadWriteLock(b, 'gone-try').writeLock.acquire({ timeoutMs: 20_000 }));
      await eventually('writer queued', async () => (await queue(a, 'gone-try')).length === 2);
      await scope.fixture.removeEntry(entryOf(write).key); // deleted by another client or an operator
      const granted = await next;
      // The owner has not yet noticed the loss: its read would be placed at the write's (gone) place.
      const refused = await owner.readLock.tryAcquire().then(
        (read) => read,
        (error: unknown) => error,
      );
      expect(refused).toBeInstanceOf(LockLostError);
      expect(granted.held).toBe(true);
      await eventually(
        'only the granted writer is queued',
        async () => (await queue(b, 'gone-try')).map((e) => e.key).join() === entryOf(granted).key,
      );
      await granted.release();
      await write.release();
    });

    it("downgrades without a gap: the read takes the writer's place, earlier readers proceed, later writers wait", async () => {
      const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
      const owner = new ReadWriteLock(a, 'downgrade');
      const write = await owner.writeLock.acquire();
      const reader = track(new ReadWriteLock(b, 'downgrade').readLock.acquire());
      await eventually('reader queued', async () => {
        rethrowFailure(reader);
        return (await queue(a, 'downgrade')).length === 2;
      });
      const writer = track(new ReadWriteLock(c, 'downgrade').writeLock.acquire());
      await eventually('writer queued', async () => {
        rethrowFailure(reader);
        rethrowFailure(writer);
        return (await queue(a, 'downgrade')).length === 3;
      });
      const read = await owner.downgrade(write);
      expect(write.held).toBe(false);
      expect(read.held).toBe(true);
      const entries = await queue(a, 'downgrade');
      expect(entries.map((e) => e.kind)).toEqual(['read', 'read', 'write']);
      expect(entries[0]!.order < entries[1]!.order).toBe(true);
      const other = await reader.promise; // the reader that queued behind the writer now shares with us
      expect(writer.settled).toBe(false);
      await other.release();
      expect(writer.settled).toBe(false);
      await read.release();
      await (await writer.promise).release();
    });

    it('a downgrade whose write release fails keeps the write lock and leaves no read behind', async () => {
      const a = await scope.open();
      const rw = new ReadWriteLock(a, 'half-down');
      const write = await rw.writeLock.acquire();
      const refusal = new BackendError('refused by the test');
      const withdraw = vi.spyOn(backendOf(a), 'withdraw').mockImplementationOnce(() => Promise.reject(refusal));
      try {
        await expect(rw.downgrade(write)).rejects.toBe(refusal);
      } finally {
        withdraw.mockRestore();
      }
      expect(write.held).toBe(true);
      expect((await queue(a, 'half-down')).map((e) => e.key)).toEqual([entryOf(write).key]);
      // Nothing of the failed downgrade is held: the object may still write, and downgrade again.
      const read = await rw.downgrade(write);
      await read.release();
      expect(await queue(a, 'half-down')).toEqual([]);
    });

    it('takes the read lock at once for the holder of the write lock, ahead of queued writers', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const owner = new ReadWriteLock(a, 'reenter-read');
      const write = await owner.writeLock.acquire();
      const writer = track(new ReadWriteLock(b, 'reenter-read').writeLock.acquire());
      await eventually('writer queued', async () => (await queue(a, 'reenter-read')).length === 2);
      const read = await owner.readLock.acquire({ timeoutMs: 0 });
      await write.release();
      // The writer's blocker left, but the read entry sits ahead of it now: it must wait for that one.
      await eventually('the writer waits for the read entry', async () =>
        (await scope.fixture.watched(scope.namespace)).includes(entryOf(read).key),
      );
      expect(writer.settled).toBe(false);
      await read.release();
      await (await writer.promise).release();
    });

    it('refuses an upgrade at once with LockUpgradeError, creating nothing', async () => {
      const a = await scope.open();
      const rw = new ReadWriteLock(a, 'upgrade');
      const read = await rw.readLock.acquire();
      const error = await rw.writeLock.acquire({ timeoutMs: 60_000 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(LockUpgradeError);
      expect((error as LockUpgradeError).code).toBe('LOCK_UPGRADE');
      expect(await queue(a, 'upgrade')).toHaveLength(1); // a's own write and read: no lag
      await expect(rw.downgrade(read)).rejects.toBeInstanceOf(InvalidArgumentError);
      await read.release();
      await (await rw.writeLock.acquire()).release();
    });

    it('wakes all readers queued behind a writer, but exactly one of 50 queued writers per release', async () => {
      const fixture = scope.fixture;
      const sessions = [await scope.open(), await scope.open()];
      const writer = await new ReadWriteLock(sessions[0]!, 'herd').writeLock.acquire();
      const readers: Promise<LockHandle>[] = [];
      for (let i = 0; i < 50; i += 1) readers.push(new ReadWriteLock(sessions[i % 2]!, 'herd').readLock.acquire());
      await eventually('50 readers queued', async () => (await queue(sessions[0]!, 'herd')).length === 51);
      await writer.release();
      const held = await Promise.all(readers);
      expect(held.every((r) => r.held)).toBe(true); // all 50 at once
      await Promise.all(held.map((r) => r.release()));

      const first = await new ReadWriteLock(sessions[0]!, 'herd').writeLock.acquire();
      const writers: Promise<void>[] = [];
      for (let i = 0; i < 50; i += 1)
        writers.push(new ReadWriteLock(sessions[i % 2]!, 'herd').writeLock.withLock(() => undefined));
      // Watches on entries (on ZooKeeper a session may also keep one on the directory it found quiet).
      await eventually(
        '50 writers watching',
        async () => (await watched()).filter((path) => !path.endsWith('/herd')).length === 50,
      );
      const before = fixture.notifications();
      await first.release();
      await Promise.all(writers);
      expect(fixture.notifications() - before).toBe(50);
    }, 60_000);
  });
}

import { redisCounters } from 'baton-locks/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import type { Entry, Session } from '../../../recipes/contract.js';
import type { LockHandle } from '../../../recipes/handle.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { ReadWriteLock } from '../../../recipes/rw-lock.js';
import type { RedisDriver } from '../../../src/backends/redis/driver.js';
import { expireRedisSession, redisFixture } from '../../harness/backends/redis.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf } from '../../harness/internals.js';
import { queueInOrder } from '../../harness/queue-in-order.js';
import { eventually, later, track } from '../../harness/wait.js';

/** A long lease: no renewal or backstop look of note while a queue drains. */
const LONG_LEASE = { sessionTimeoutMs: 20_000 };

/** Entries a reader's wake reads: a first page of 16 ahead (and its own), then all `ahead` if the page did not decide. */
function readerWakeEntries(ahead: number): number {
  return Math.min(ahead, 16) + 1 + (ahead > 16 ? ahead + 1 : 0);
}

describe('Redis: a handoff reads only what the waiter decision needs (issue 37)', () => {
  const scope = useScope(redisFixture);
  const info = inject('redisStandalone');
  let admin: Redis;
  beforeAll(async () => {
    admin = new Redis(info.url, { lazyConnect: true });
    await admin.connect();
  });
  afterAll(() => admin.disconnect());

  const queueKey = (name: string): string => `baton:{${scope.namespace}/${name}}:q`;

  const queueUp = (
    sessions: readonly Session[],
    count: number,
    name: string,
    already: number,
    acquire: (session: Session) => Promise<LockHandle>,
  ): Promise<Promise<LockHandle>[]> =>
    queueInOrder(sessions, count, already, () => admin.hlen(queueKey(name)), acquire);

  it('the short read: nearest first (a downgrade-placed read by its id), a limit with more, only that incarnation', async () => {
    const session = await scope.open(LONG_LEASE);
    const backend = backendOf(session);
    const made: Entry[] = [];
    for (let i = 0; i < 4; i += 1) made.push((await backend.enqueue('short', 'exclusive')).entry);
    const placed = (await backend.enqueue('short', 'read', made[1])).entry;
    const self = (await backend.enqueue('short', 'exclusive')).entry;
    await admin.hset(queueKey('short'), 'not-baton', 'a field no baton client wrote');
    try {
      const listed = await backend.list('short');
      const ahead = listed
        .slice(
          0,
          listed.findIndex((entry) => entry.key === self.key),
        )
        .reverse();
      expect(ahead.map((entry) => entry.key)).toEqual(
        [made[3], made[2], placed, made[1], made[0]].map((entry) => entry!.key),
      );
      expect(await backend.listBefore!('short', self)).toEqual({ present: true, entries: ahead, more: false });
      expect(await backend.listBefore!('short', self, 2)).toEqual({
        present: true,
        entries: ahead.slice(0, 2),
        more: true,
      });
      expect(await backend.listBefore!('short', self, 5)).toEqual({ present: true, entries: ahead, more: false });
      expect(await backend.listBefore!('short', made[0]!, 1)).toEqual({ present: true, entries: [], more: false });
      const other = { ...self, order: self.order + 1n };
      expect(await backend.listBefore!('short', other)).toEqual({ present: false, entries: [], more: false });
      await backend.withdraw(self);
      expect(await backend.listBefore!('short', self, 1)).toEqual({ present: false, entries: [], more: false });
    } finally {
      await admin.hdel(queueKey('short'), 'not-baton');
      for (const entry of [...made, placed, self]) await backend.withdraw(entry);
    }
  });

  it('a mutex handoff behind 64 waiters reads its own entry and at most the one ahead', async () => {
    const holderSession = await scope.open(LONG_LEASE);
    const sessions = [await scope.open(LONG_LEASE), await scope.open(LONG_LEASE)];
    const holder = await new FairMutex(holderSession, 'deep').acquire();
    const waits = await queueUp(sessions, 64, 'deep', 1, (session) => new FairMutex(session, 'deep').acquire());
    const before = redisCounters.queueEntriesRead;
    await holder.release();
    for (const wait of waits) await (await wait).release();
    // A whole listing at each wake would read the 64, 63, ... waiters still queued (2,080 entries in all).
    expect(redisCounters.queueEntriesRead - before).toBeLessThanOrEqual(2 * 64);
  }, 120_000);

  it('an enqueue behind up to 64 waiters answers with its own entry and the one ahead, never the queue', async () => {
    const holderSession = await scope.open(LONG_LEASE);
    const sessions = [await scope.open(LONG_LEASE), await scope.open(LONG_LEASE)];
    const holder = await new FairMutex(holderSession, 'long').acquire();
    const before = redisCounters.queueEntriesRead;
    const waits = await queueUp(sessions, 64, 'long', 1, (session) => new FairMutex(session, 'long').acquire());
    // Two entries an enqueue (beside a rare backstop look); whole listings read 2, 3, ... 65 (2,144 in all).
    expect(redisCounters.queueEntriesRead - before).toBeLessThanOrEqual(3 * 64);
    await holder.release();
    for (const wait of waits) await (await wait).release();
  }, 120_000);

  it('a session sends at most 16 enqueues at once: 200 acquires started together queue in turn', async () => {
    const holderSession = await scope.open(LONG_LEASE);
    const session = await scope.open(LONG_LEASE);
    const holder = await new FairMutex(holderSession, 'burst').acquire();
    redisCounters.enqueuesInFlightMost = 0;
    const waits = Array.from({ length: 200 }, () => track(new FairMutex(session, 'burst').acquire()));
    await eventually('200 waiters queued', async () => (await admin.hlen(queueKey('burst'))) === 201, 60_000);
    expect(redisCounters.enqueuesInFlightMost).toBeGreaterThan(1);
    expect(redisCounters.enqueuesInFlightMost).toBeLessThanOrEqual(16);
    await holder.release();
    await Promise.all(waits.map(async (wait) => (await wait.promise).release()));
  }, 120_000);

  it('128 readers woken behind a writer read back to the head, never the 32 writers queued behind them', async () => {
    const writerSession = await scope.open(LONG_LEASE);
    const sessions = [await scope.open(LONG_LEASE), await scope.open(LONG_LEASE)];
    const writer = await new ReadWriteLock(writerSession, 'readers').writeLock.acquire();
    const reads = await queueUp(sessions, 128, 'readers', 1, (s) => new ReadWriteLock(s, 'readers').readLock.acquire());
    const writes = await queueUp(sessions, 32, 'readers', 129, (s) =>
      new ReadWriteLock(s, 'readers').writeLock.acquire(),
    );
    const before = redisCounters.queueEntriesRead;
    await writer.release();
    const held = await Promise.all(reads);
    const read = redisCounters.queueEntriesRead - before;
    const tracked = writes.map((write) => track(write));
    for (const lock of held) await lock.release();
    for (const write of tracked) await (await write.promise).release();
    let bound = 0;
    for (let ahead = 0; ahead < 128; ahead += 1) bound += readerWakeEntries(ahead);
    // 10,143 entries; a whole listing at each wake reads the 128 readers and 32 writers, 20,480.
    expect(read).toBeLessThanOrEqual(bound);
  }, 120_000);

  it("an expired session's entry ahead is swept by the short read (its channel told), and the waiter behind it granted", async () => {
    const writerSession = await scope.open(LONG_LEASE);
    const expiring = await scope.open(LONG_LEASE);
    const waiterSession = await scope.open(LONG_LEASE);
    const others = [await scope.open(LONG_LEASE)];
    const writer = await new ReadWriteLock(writerSession, 'expired').writeLock.acquire();
    const [dead] = await queueUp([expiring], 1, 'expired', 1, (s) =>
      new ReadWriteLock(s, 'expired').readLock.acquire(),
    );
    const [waiting] = await queueUp([waiterSession], 1, 'expired', 2, (s) =>
      new ReadWriteLock(s, 'expired').readLock.acquire(),
    );
    const writes = await queueUp(others, 16, 'expired', 3, (s) => new ReadWriteLock(s, 'expired').writeLock.acquire());
    // The reader's session ends as its expiry would, with nothing said to the server: its entry stays in
    // the hash, dead, until a script reads the queue. The waiter behind it watches the writer, not it.
    const deadId = (await admin.hkeys(queueKey('expired'))).find((id) => id.startsWith(`${expiring.id}-`));
    expect(deadId).toBeDefined();
    const channel = `baton:{${scope.namespace}/expired}:e:${deadId!}`;
    const listener = new Redis(info.url, { lazyConnect: true });
    const told: string[] = [];
    try {
      await listener.connect();
      listener.on('message', (_channel: string, message: string) => void told.push(message));
      await listener.subscribe(channel);
      (backendOf(expiring) as RedisDriver).abandon(new Error('the test ends this session without a word'));
      await expect(dead).rejects.toThrow();
      await expireRedisSession(info, expiring);
      expect(await admin.hexists(queueKey('expired'), deadId!)).toBe(1);
      const before = redisCounters.queueEntriesRead;
      await writer.release();
      const read = await later(waiting!);
      const entriesRead = redisCounters.queueEntriesRead - before;
      const swept = (await admin.hexists(queueKey('expired'), deadId!)) === 0;
      const tracked = writes.map((write) => track(write));
      await read.release();
      for (const write of tracked) await (await write.promise).release();
      // Its own entry, nothing ahead once the dead reader is swept; a whole listing reads the 16 writers too.
      expect(entriesRead).toBeLessThanOrEqual(2);
      expect(swept).toBe(true);
      await eventually("the dead entry's channel told", () => told.includes('expired'));
    } finally {
      listener.disconnect();
    }
  }, 60_000);
});

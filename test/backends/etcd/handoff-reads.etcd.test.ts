import { etcdCounters, etcdWatches } from 'baton-locks/testing';
import { describe, expect, inject, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import type { LockHandle } from '../../../recipes/handle.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { ReadWriteLock } from '../../../recipes/rw-lock.js';
import { etcdFixture, useEtcdAdmin } from '../../harness/backends/etcd.js';
import { useScope } from '../../harness/backends/scope.js';
import { entryOf } from '../../harness/internals.js';
import { queueInOrder } from '../../harness/queue-in-order.js';
import { eventually, track } from '../../harness/wait.js';

/** Unary gRPC requests the server handled so far (its `/metrics`, which costs no gRPC request). */
async function unaryHandled(endpoint: string): Promise<number> {
  let total = 0;
  for (const line of (await (await fetch(`${endpoint}/metrics`)).text()).split('\n'))
    if (line.startsWith('grpc_server_handled_total{') && line.includes('grpc_type="unary"'))
      total += Number(line.slice(line.lastIndexOf(' ') + 1));
  return total;
}

/** Keys a reader's wake reads: a first page of 16 ahead (and its own key), then all `ahead` if the page did not decide. */
function readerWakeKeys(ahead: number): number {
  return Math.min(ahead, 16) + 1 + (ahead > 16 ? ahead + 1 : 0);
}

describe('etcd: a handoff reads only what the waiter decision needs (issue 37)', () => {
  const scope = useScope(() => etcdFixture('etcdStandalone'));
  const info = inject('etcdStandalone');
  const admin = useEtcdAdmin();

  const queued = (name: string, count: number): Promise<void> =>
    eventually(
      `${count} entries queued`,
      async () => (await admin().getAll().prefix(`${scope.namespace}/${name}/#/`).keys()).length === count,
      60_000,
    );

  const queueUp = (
    sessions: readonly Session[],
    count: number,
    name: string,
    already: number,
    acquire: (session: Session) => Promise<LockHandle>,
  ): Promise<Promise<LockHandle>[]> =>
    queueInOrder(
      sessions,
      count,
      already,
      async () => (await admin().getAll().prefix(`${scope.namespace}/${name}/#/`).keys()).length,
      acquire,
    );

  it('a mutex handoff behind 64 waiters reads one entry and sends two requests (release, one short read)', async () => {
    const holderSession = await scope.open();
    const sessions = [await scope.open(), await scope.open()];
    const holder = await new FairMutex(holderSession, 'deep').acquire();
    const waits = await queueUp(sessions, 64, 'deep', 1, (session) => new FairMutex(session, 'deep').acquire());
    const keysBefore = etcdCounters.queueKeysRead;
    const requestsBefore = await unaryHandled(info.endpoints[0]!);
    await holder.release();
    for (const wait of waits) await (await wait).release();
    const keysRead = etcdCounters.queueKeysRead - keysBefore;
    const requests = (await unaryHandled(info.endpoints[0]!)) - requestsBefore;
    // A woken waiter reads its own key and at most the one entry created before it; a whole listing
    // at each wake would read the 63, 62, ... waiters still queued (2,016 keys in all).
    expect(keysRead).toBeLessThanOrEqual(2 * 64);
    // One delete and one read per handoff, beside the rare backstop look or orphan sweep.
    expect(requests).toBeLessThanOrEqual(2 * 65 + 8);
  });

  it('an enqueue behind up to 64 waiters reads its own key and the one created before it, never the queue', async () => {
    const holderSession = await scope.open();
    const sessions = [await scope.open(), await scope.open()];
    const holder = await new FairMutex(holderSession, 'long').acquire();
    const keysBefore = etcdCounters.queueKeysRead;
    const waits = await queueUp(sessions, 64, 'long', 1, (session) => new FairMutex(session, 'long').acquire());
    const keysRead = etcdCounters.queueKeysRead - keysBefore;
    // Two keys an enqueue (a window of one entry ahead), beside the rare backstop look; an enqueue
    // answered with the whole queue reads 2, 3, ... 65 keys (2,144 in all).
    expect(keysRead).toBeLessThanOrEqual(3 * 64);
    await holder.release();
    for (const wait of waits) await (await wait).release();
  });

  it('a session sends at most 16 enqueues at once: 200 acquires started together queue in turn', async () => {
    // etcd answered no keepalive for the TTL while 10,000 enqueues were in flight (each reads its queue).
    const holderSession = await scope.open();
    const session = await scope.open();
    const holder = await new FairMutex(holderSession, 'burst').acquire();
    etcdCounters.enqueuesInFlightMost = 0;
    const waits = Array.from({ length: 200 }, () => track(new FairMutex(session, 'burst').acquire()));
    await queued('burst', 201);
    expect(etcdCounters.enqueuesInFlightMost).toBeGreaterThan(1);
    expect(etcdCounters.enqueuesInFlightMost).toBeLessThanOrEqual(16);
    await holder.release();
    // In their order on the server, which 16 sends at once need not keep: each released once granted.
    await Promise.all(waits.map(async (wait) => (await wait.promise).release()));
  });

  it('a write lock behind 32 readers reads short at each wake: its own write entry sends nobody to whole listings', async () => {
    const sessions = [await scope.open(), await scope.open()];
    const reads = [];
    for (let i = 0; i < 32; i += 1) reads.push(await new ReadWriteLock(sessions[i % 2]!, 'writer').readLock.acquire());
    const writer = track(new ReadWriteLock(await scope.open(), 'writer').writeLock.acquire());
    await queued('writer', 33);
    const keysBefore = etcdCounters.queueKeysRead;
    // Newest first, so that every release wakes the writer, which then watches the reader before it.
    for (let i = reads.length - 1; i > 0; i -= 1) {
      await reads[i]!.release();
      const next = entryOf(reads[i - 1]!).key;
      await eventually(`the writer watches reader ${i - 1}`, () => etcdWatches.has(next));
    }
    const keysRead = etcdCounters.queueKeysRead - keysBefore;
    // Its own key and the one reader ahead at each of 31 wakes; whole listings would read 33, 32, ... (528 in all).
    expect(keysRead).toBeLessThanOrEqual(3 * 31);
    await reads[0]!.release();
    await (await writer.promise).release();
  });

  it('128 readers woken behind a writer read back to the head, never the 32 writers queued behind them', async () => {
    const writerSession = await scope.open();
    const sessions = [await scope.open(), await scope.open()];
    const writer = await new ReadWriteLock(writerSession, 'readers').writeLock.acquire();
    const reads = await queueUp(sessions, 128, 'readers', 1, (s) => new ReadWriteLock(s, 'readers').readLock.acquire());
    const writes = await queueUp(sessions, 32, 'readers', 129, (s) =>
      new ReadWriteLock(s, 'readers').writeLock.acquire(),
    );
    const keysBefore = etcdCounters.queueKeysRead;
    await writer.release();
    const held = await Promise.all(reads);
    const keysRead = etcdCounters.queueKeysRead - keysBefore;
    let bound = 0;
    for (let ahead = 0; ahead < 128; ahead += 1) bound += readerWakeKeys(ahead);
    // 10,143 keys; a whole listing at each wake reads the 128 readers and 32 writers, 20,480 keys.
    expect(keysRead).toBeLessThanOrEqual(bound);
    const tracked = writes.map((write) => track(write));
    for (const read of held) await read.release();
    for (const write of tracked) await (await write.promise).release();
  });

  it('a mutex behind a reader behind a write lock waits for the downgrade read it never sees in create order', async () => {
    // The downgrade's read is created after the mutex's entry, at the writer's place ahead of it: a
    // short read by create revision would miss it. The write lock ahead sends the mutex to whole listings.
    const writerSession = await scope.open();
    const readerSession = await scope.open();
    const mutexSession = await scope.open();
    const rw = new ReadWriteLock(writerSession, 'mixed');
    const write = await rw.writeLock.acquire();
    const read = track(new ReadWriteLock(readerSession, 'mixed').readLock.acquire());
    await queued('mixed', 2);
    const mutex = track(new FairMutex(mutexSession, 'mixed').acquire());
    await queued('mixed', 3);
    const downgraded = await rw.downgrade(write);
    await (await read.promise).release();
    // Woken by the reader's release, the mutex must find the downgrade's read and watch it, ungranted.
    const readKey = (await admin().getAll().prefix(`${scope.namespace}/mixed/#/`).keys()).find((key) =>
      key.includes('-read@'),
    );
    expect(readKey).toBeDefined();
    await eventually('the mutex watches the downgrade read', () => mutex.settled || etcdWatches.has(readKey!));
    expect(mutex.settled).toBe(false);
    await downgraded.release();
    await (await mutex.promise).release();
  });
});

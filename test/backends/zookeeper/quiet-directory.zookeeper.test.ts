import { connect, zkCounters, zkProbeOf } from 'baton-locks/testing';
import zookeeper from 'node-zookeeper-client';
import { describe, expect, inject, it } from 'vitest';

import { LockTimeoutError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { create, remove } from '../../../src/backends/zookeeper/client.js';
import { mkdirp } from '../../../src/backends/zookeeper/mkdirp.js';
import { useScope } from '../../harness/backends/scope.js';
import { useZkAdmin, zkFixture } from '../../harness/backends/zookeeper.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { eventually, later } from '../../harness/wait.js';

/**
 * A lock used again and again by one session alone: its enqueue sends the create without the listing,
 * when the create's sequence proves the entry alone (see `QuietDirectories.aloneAfter`), and lists in
 * every case where it cannot.
 */
describe('ZooKeeper: enqueues into a quiet directory', () => {
  const scope = useScope(() => zkFixture('zkStandalone'));
  const info = inject('zkStandalone');
  const zkAdmin = useZkAdmin(() => info.connectString);
  const withinMs = (): number => info.sessionTimeoutMs * 2;

  it('go without a listing from the third cycle on, and the directory gets one watch', async () => {
    const session = await scope.open();
    const mutex = new FairMutex(session, 'alone');
    const before = zkCounters.unlisted;
    const tokens: bigint[] = [];
    for (let i = 0; i < 10; i += 1) {
      const lock = await mutex.acquire({ timeoutMs: withinMs() });
      tokens.push(lock.fencingToken);
      expect(await backendOf(session).list('alone')).toEqual([entryOf(lock)]);
      await lock.release();
    }
    // The first cycle finds the directory quiet, the second sets its watch, the rest need no listing.
    expect(zkCounters.unlisted - before).toBe(8);
    expect([...tokens].sort((a, b) => (a < b ? -1 : 1))).toEqual(tokens);
    expect(new Set(tokens).size).toBe(10);
    expect(zkProbeOf(session).view.quietDirectories).toEqual([`/${scope.namespace}/alone`]);
    expect(await scope.fixture.watched(scope.namespace)).toEqual([`/${scope.namespace}/alone`]);
  });

  it("see another session's entry created in between: the create lists, and waits behind it", async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const mutex = new FairMutex(a, 'joined');
    for (let i = 0; i < 3; i += 1) await (await mutex.acquire()).release();
    const held = await new FairMutex(b, 'joined').acquire();
    const before = zkCounters.unlisted;
    await expect(mutex.acquire({ timeoutMs: 100 })).rejects.toBeInstanceOf(LockTimeoutError);
    const waiting = later(mutex.acquire({ timeoutMs: withinMs() }));
    await eventually('a queued behind b', async () => (await backendOf(b).list('joined')).length === 2, withinMs());
    expect(zkCounters.unlisted - before).toBe(0);
    await held.release();
    await (await waiting).release();
  });

  it('stop going unlisted while two sessions take turns: one miss, then a create and its listing together again', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const [mutexA, mutexB] = [new FairMutex(a, 'turns'), new FairMutex(b, 'turns')];
    for (let i = 0; i < 3; i += 1) await (await mutexA.acquire()).release();
    const [unlisted, missed] = [zkCounters.unlisted, zkCounters.unlistedMissed];
    for (let i = 0; i < 5; i += 1) {
      await (await mutexB.acquire({ timeoutMs: withinMs() })).release();
      await (await mutexA.acquire({ timeoutMs: withinMs() })).release();
    }
    // a's first create after b's misses and lists; from then on a lists with every create, since b keeps
    // creating in between (the same for b, which never found the directory quiet twice in a row).
    expect(zkCounters.unlistedMissed - missed).toBe(1);
    expect(zkCounters.unlisted - unlisted).toBe(0);
    // Alone again, a goes unlisted from its second cycle on: the first one's listing shows that nobody
    // else created an entry since a's previous one, and the directory's watch still stands.
    for (let i = 0; i < 4; i += 1) await (await mutexA.acquire()).release();
    expect(zkCounters.unlisted - unlisted).toBe(3);
  });

  it('see a directory removed and created again, even when the new one has had exactly as many creates', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const dir = `/${scope.namespace}/again`;
    const mutex = new FairMutex(a, 'again');
    for (let i = 0; i < 3; i += 1) await (await mutex.acquire()).release();
    const before = zkCounters.unlisted;
    await (await mutex.acquire()).release();
    expect(zkCounters.unlisted - before).toBe(1); // the fast way is in use: the next create expects sequence 4
    // An operator removes the empty directory, and it is created again; three creates and deletes,
    // then b's entry, the fifth create: sequence 4, the number a's next create would have taken.
    await remove(zkAdmin(), dir);
    await mkdirp(zkAdmin(), dir);
    for (let i = 0; i < 3; i += 1)
      await remove(zkAdmin(), await create(zkAdmin(), `${dir}/x`, zookeeper.CreateMode.PERSISTENT_SEQUENTIAL));
    const held = await new FairMutex(b, 'again').acquire();
    expect(entryOf(held).key.endsWith('0000000003')).toBe(true);
    const unlisted = zkCounters.unlisted;
    const { entry, queue } = await backendOf(a).enqueue('again', 'lock');
    expect(entry.key.endsWith('0000000004')).toBe(true);
    // The watch on the directory told a of the removal before the reply to its create: it listed, and
    // found b's entry ahead (without the watch, the sequence alone would have said "alone").
    expect(queue.map((e) => e.key)).toEqual([entryOf(held).key, entry.key]);
    expect(zkCounters.unlisted).toBe(unlisted);
    await backendOf(a).withdraw(entry);
    await expect(mutex.acquire({ timeoutMs: 100 })).rejects.toBeInstanceOf(LockTimeoutError);
    await held.release();
    await (await mutex.acquire({ timeoutMs: withinMs() })).release();
  });

  it('list again after a reconnect, until the watch is set again on the new connection', async () => {
    const proxy = await TcpProxy.start({ port: info.ports[0]! });
    const session = await connect(`zk://${proxy.address}/${scope.namespace}`, scope.fixture.options);
    try {
      const mutex = new FairMutex(session, 'reconnect');
      const cycle = async (): Promise<number> => {
        const before = zkCounters.unlisted;
        await (await mutex.acquire({ timeoutMs: withinMs() })).release();
        return zkCounters.unlisted - before;
      };
      for (let i = 0; i < 2; i += 1) await cycle();
      expect(await cycle()).toBe(1);
      const states: string[] = [];
      session.on('state', (state) => states.push(state));
      proxy.drop();
      await eventually('reconnected', () => states.includes('suspended') && session.state === 'connected', withinMs());
      // A watch confirmed on the earlier connection proves nothing: this cycle lists, and sets it again.
      expect(await cycle()).toBe(0);
      expect(await cycle()).toBe(1);
    } finally {
      await session.close();
      await proxy.close();
    }
  });
});

import { etcdCounters } from 'baton-locks/testing';
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import { etcdFixture } from '../../harness/backends/etcd.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';

/**
 * etcd serves a watch whose start revision is at or below its head from a catch-up loop that runs every
 * 100 ms. A wait whose read is older than the head (others wrote meanwhile, as under contention) is
 * therefore watched again from the head, and the entry read once more after that watch exists.
 */
describe('etcd: a wait whose read is older than the head', () => {
  const scope = useScope(() => etcdFixture('etcdStandalone'));
  const info = inject('etcdStandalone');
  let admin: Etcd3;
  beforeAll(() => {
    admin = new Etcd3({ hosts: info.endpoints });
  });
  afterAll(() => admin.close());

  /**
   * The waiter's lease is 8 times the suite's, so its periodic look (every keepalive interval) comes
   * after the deadline its waits get here: what wakes them is the watch or the look after it.
   */
  const openWaiter = () => scope.open({ ttlSeconds: info.ttlSeconds * 8 });

  /** The holder's entry as the waiter read it, then a write elsewhere that moves the head past that read. */
  async function staleRead(queue: string) {
    const [owner, waiter] = [await scope.open(), await openWaiter()];
    const held = await backendOf(owner).enqueue(queue, 'lock');
    const { entry, queue: seen } = await backendOf(waiter).enqueue(queue, 'lock');
    await admin.put(`${scope.namespace}-elsewhere`).value('moved');
    const blocker = seen.find((e) => e.key === held.entry.key)!;
    return { owner, waiter, held: held.entry, blocker, own: entry };
  }

  afterAll(() => admin.delete().key(`${scope.namespace}-elsewhere`));

  it('is watched again from the head, and a delete made after that watch wakes it', async () => {
    const { owner, waiter, held, blocker, own } = await staleRead('after');
    const rearmed = etcdCounters.watchesRearmed;
    const gone = backendOf(waiter).waitGone(blocker, AbortSignal.timeout(info.ttlSeconds * 1_000));
    await eventually('watched again from the head', () => Promise.resolve(etcdCounters.watchesRearmed === rearmed + 1));
    await eventually('the head watch in place', async () =>
      (await scope.fixture.watched(scope.namespace)).includes(held.key),
    );
    await backendOf(owner).withdraw(held);
    await gone;
    await backendOf(waiter).withdraw(own);
  });

  it('is woken by the look after the head watch when the entry went between the read and that watch', async () => {
    const { owner, waiter, held, blocker, own } = await staleRead('between');
    await backendOf(owner).withdraw(held); // after the waiter's read, before its watch: no watch from the head sees it
    const rearmed = etcdCounters.watchesRearmed;
    await backendOf(waiter).waitGone(blocker, AbortSignal.timeout(info.ttlSeconds * 1_000));
    expect(etcdCounters.watchesRearmed).toBe(rearmed + 1);
    await backendOf(waiter).withdraw(own);
  });

  it('a wait whose read is the head keeps its first watch', async () => {
    const [owner, waiter] = [await scope.open(), await openWaiter()];
    const held = await backendOf(owner).enqueue('fresh', 'lock');
    const { entry, queue: seen } = await backendOf(waiter).enqueue('fresh', 'lock');
    const rearmed = etcdCounters.watchesRearmed;
    const gone = backendOf(waiter).waitGone(
      seen.find((e) => e.key === held.entry.key)!,
      AbortSignal.timeout(info.ttlSeconds * 1_000),
    );
    await eventually('watched', async () => (await scope.fixture.watched(scope.namespace)).includes(held.entry.key));
    await backendOf(owner).withdraw(held.entry);
    await gone;
    expect(etcdCounters.watchesRearmed).toBe(rearmed);
    await backendOf(waiter).withdraw(entry);
  });
});

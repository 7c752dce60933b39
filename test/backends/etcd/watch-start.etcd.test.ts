import { etcdCounters } from 'baton-locks/testing';
import { afterAll, describe, expect, inject, it } from 'vitest';

import { etcdFixture, useEtcdAdmin } from '../../harness/backends/etcd.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';

/**
 * A wait for an entry watches its key from etcd's head revision (which etcd serves at once, where an
 * older start waits for a catch-up loop that runs every 100 ms) and reads the key once that watch exists.
 */
describe('etcd: a wait for an entry read before others wrote', () => {
  const scope = useScope(() => etcdFixture('etcdStandalone'));
  const info = inject('etcdStandalone');
  const admin = useEtcdAdmin();
  afterAll(() => admin().delete().key(`${scope.namespace}-elsewhere`));

  /**
   * The waiter's lease is 8 times the suite's, so its periodic look (every keepalive interval) comes
   * after the deadline its waits get here: what wakes them is the watch or the read after it.
   */
  const openWaiter = () => scope.open({ ttlSeconds: info.ttlSeconds * 8 });

  /** The holder's entry as the waiter read it, then a write elsewhere that moves the head past that read. */
  async function staleRead(queue: string) {
    const [owner, waiter] = [await scope.open(), await openWaiter()];
    const held = await backendOf(owner).enqueue(queue, 'lock');
    const { entry, queue: seen } = await backendOf(waiter).enqueue(queue, 'lock');
    await admin().put(`${scope.namespace}-elsewhere`).value('moved');
    const blocker = seen.find((e) => e.key === held.entry.key)!;
    return { owner, waiter, held: held.entry, blocker, own: entry };
  }

  it('is woken by a delete made after its watch, which it keeps', async () => {
    const { owner, waiter, held, blocker, own } = await staleRead('after');
    const remade = etcdCounters.watchesRemade;
    const gone = backendOf(waiter).waitGone(blocker, AbortSignal.timeout(info.ttlSeconds * 1_000));
    await eventually('the watch in place', async () =>
      (await scope.fixture.watched(scope.namespace)).includes(held.key),
    );
    await backendOf(owner).withdraw(held);
    await gone;
    expect(etcdCounters.watchesRemade).toBe(remade);
    await backendOf(waiter).withdraw(own);
  });

  it('is woken by the read after its watch when the entry went between its first read and that watch', async () => {
    const { owner, waiter, held, blocker, own } = await staleRead('between');
    await backendOf(owner).withdraw(held); // after the waiter's read, before its watch: the watch never sees it
    await backendOf(waiter).waitGone(blocker, AbortSignal.timeout(info.ttlSeconds * 1_000));
    await backendOf(waiter).withdraw(own);
  });
});

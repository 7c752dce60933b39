import { etcdCounters, etcdProbeOf } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import { FairMutex } from '../../../recipes/mutex.js';
import { useOwnEtcd } from '../../harness/backends/etcd.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';

const TTL_SECONDS = 2;

// An etcd of its own: compacting the shared server's history would break other files' watches.
describe('etcd: waits whose read was compacted away before their watch (a wait for an entry, a wait for any change)', () => {
  const { scope, admin } = useOwnEtcd(TTL_SECONDS);

  /** Writes elsewhere, then compacts the history up to the head: every older revision is gone. */
  async function compactToHead(): Promise<void> {
    for (let i = 0; i < 3; i += 1) await admin().put(`elsewhere-${scope.namespace}`).value(String(i));
    const { header } = await admin().kv.range({ key: Buffer.from(`elsewhere-${scope.namespace}`) });
    await admin().kv.compact({ revision: header.revision, physical: true });
    await admin().delete().key(`elsewhere-${scope.namespace}`);
  }

  /**
   * A watch of our own from a compacted revision, made now, and its end awaited: etcd ends such watches
   * in the loop that also serves watches started in the past, so any made before this one are ended too.
   */
  async function etcdHasEndedCompactedWatches(): Promise<void> {
    const watcher = await admin().watch().key(`probe-${scope.namespace}`).startRevision('1').create();
    await new Promise((resolve) => watcher.once('error', resolve));
  }

  it('a wait for an entry read before the compaction is still woken when the entry goes', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'q').acquire();
    const { entry, queue } = await backendOf(b).enqueue('q', 'lock');
    expect(queue.map((e) => e.key)).toEqual([entryOf(held).key, entry.key]);
    await compactToHead();
    const remade = etcdCounters.watchesRemade;
    const outcome: string[] = [];
    const gone = backendOf(b)
      .waitGone(queue[0]!, new AbortController().signal)
      .then(
        () => outcome.push('woken'),
        (error: unknown) => outcome.push(`failed: ${String(error)}`),
      );
    await eventually('the wait watched', async () =>
      (await scope.fixture.watched(scope.namespace)).includes(entryOf(held).key),
    );
    await etcdHasEndedCompactedWatches();
    await held.release();
    await gone;
    expect(outcome).toEqual(['woken']);
    // Its watch starts at the head, never at the compacted read: etcd does not end it (ending it races a
    // cancel of ours, whose second answer etcd3 throws on, out of reach of any handler).
    expect(etcdCounters.watchesRemade).toBe(remade);
    const probe = etcdProbeOf(b);
    await eventually(
      'no watcher left waiting for its cancel',
      () => probe.view.watchersClosing === 0,
      TTL_SECONDS * 1_000,
    );
    await backendOf(b).withdraw(entry);
  });

  it('a change wait (observe, inspect --watch) whose history is compacted before its watch starts keeps its watch and sees the next change', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'q').acquire();
    const seen = await backendOf(b).list('q');
    const probe = etcdProbeOf(b);
    probe.beforePrefixWatch = async () => {
      probe.beforePrefixWatch = undefined;
      await compactToHead();
    };
    const outcome: string[] = [];
    const changed = backendOf(b)
      .waitChange('q', seen, new AbortController().signal)
      .then(
        () => outcome.push('woken'),
        (error: unknown) => outcome.push(`failed: ${String(error)}`),
      );
    await eventually('the queue watched', async () => (await scope.fixture.watched(scope.namespace)).length > 0);
    expect(probe.beforePrefixWatch).toBeUndefined(); // the compaction did happen in between
    // Had its watch started at the listing's (compacted) revision, etcd would have ended it by now,
    // and the wait woken with nothing changed.
    await etcdHasEndedCompactedWatches();
    await backendOf(b).list('q'); // a round trip on the waiter's own connection, behind any end etcd sent it
    expect(outcome).toEqual([]);
    await held.release();
    await changed;
    expect(outcome).toEqual(['woken']);
    expect(await backendOf(b).list('q')).toEqual([]);
    await eventually(
      'no watcher left waiting for its cancel',
      () => probe.view.watchersClosing === 0,
      TTL_SECONDS * 1_000,
    );
  });
});

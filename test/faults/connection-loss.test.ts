import { describe, expect, it } from 'vitest';

import { FairMutex } from '../../recipes/mutex.js';
import { useScope } from '../harness/backends/scope.js';
import { expectLateWriteRefused, useRegister, writeWhileHeld } from '../harness/checkers/fenced-writes.js';
import { layouts, throughProxy } from '../harness/faults/layouts.js';
import { backendOf, entryOf } from '../harness/internals.js';
import { eventually, later } from '../harness/wait.js';

/** A connection cut right after a request reached the server (or before), mid-create, mid-delete, mid-watch. */
describe.each(layouts)('connection loss mid-request on $name', (layout) => {
  const scope = useScope(() => layout.fixture());
  const register = useRegister();
  const lastSegment = (key: string): string => key.slice(key.lastIndexOf('/') + 1);

  // On ZooKeeper also with kazoo's names, which carry the creator's id in another form.
  const dialects = layout.name.startsWith('zk') ? ([undefined, 'kazoo'] as const) : ([undefined] as const);
  for (const [when, interop] of (['after', 'before'] as const).flatMap((when) =>
    dialects.map((interop) => [when, interop] as const),
  )) {
    it(`an enqueue cut ${when} it reached the server is repaired: one entry, ours, never an orphan${interop === undefined ? '' : ` (${interop} names)`}`, async () => {
      const { proxy, session, close } = await throughProxy(layout, scope.namespace);
      try {
        const mutex = new FairMutex(session, 'inflight', interop === undefined ? undefined : { interop });
        await (await mutex.acquire()).release(); // the ZooKeeper directory exists, so the cut create can succeed
        let cut = Promise.resolve();
        if (when === 'after') {
          // The client may not come back before the server has applied the request: a reconnect that
          // overtook it would make ZooKeeper refuse it (session moved), and nothing would be adopted.
          proxy.refuse();
          cut = proxy.dropAfterNextRequest((chunk) => layout.isEnqueue(chunk, session));
        } else {
          proxy.blackhole();
        }
        const sentBefore = proxy.bytesUp;
        const adoptedBefore = layout.adopted();
        const acquiring = later(mutex.acquire({ timeoutMs: layout.timeoutMs() * 5 }));
        await cut;
        if (when === 'after') {
          await eventually(
            'the cut enqueue applied',
            async () => (await scope.fixture.entries(scope.namespace)).length === 1,
            layout.timeoutMs(),
          );
        } else {
          await eventually('enqueue sent into the blackhole', () => proxy.bytesUp > sentBefore, layout.timeoutMs());
          proxy.drop();
        }
        proxy.restore();
        const lock = await acquiring;
        // The request that reached the server is found again (adopted); the one that did not is sent again.
        expect(layout.adopted() - adoptedBefore).toBe(when === 'after' ? 1 : 0);
        expect(await scope.fixture.entries(scope.namespace)).toEqual([entryOf(lock).key]);
        expect(await backendOf(session).confirm(entryOf(lock))).toBe(true);
        await writeWhileHeld(register().url, lock);
        await lock.release();
        expect(await backendOf(session).list('inflight')).toEqual([]);
      } finally {
        await close();
      }
    });
  }

  it('a release whose reply is lost still deletes the entry, the next waiter gets the lock, the old token is fenced off', async () => {
    const { proxy, session, close } = await throughProxy(layout, scope.namespace);
    try {
      const other = await scope.open();
      const held = await new FairMutex(session, 'release').acquire();
      await writeWhileHeld(register().url, held);
      const next = later(new FairMutex(other, 'release').acquire({ timeoutMs: layout.timeoutMs() * 5 }));
      await eventually(
        'waiter queued',
        async () => (await backendOf(other).list('release')).length === 2,
        layout.timeoutMs(),
      );
      const cut = proxy.dropAfterNextRequest((chunk) => chunk.includes(lastSegment(entryOf(held).key)));
      const releasing = held.release();
      await cut;
      await releasing;
      expect(held.held).toBe(false);
      const lock = await next;
      await writeWhileHeld(register().url, lock);
      await expectLateWriteRefused(register().url, held);
      expect((await backendOf(other).list('release')).map((e) => e.key)).toEqual([entryOf(lock).key]);
      await lock.release();
    } finally {
      await close();
    }
  });

  it('a waiter whose watch request is cut is still woken when its predecessor goes', async () => {
    const { proxy, session, close } = await throughProxy(layout, scope.namespace);
    try {
      const holder = await scope.open();
      const held = await new FairMutex(holder, 'watch').acquire();
      await writeWhileHeld(register().url, held);
      // The waiter's first request naming the holder's entry is its watch on it.
      const cut = proxy.dropAfterNextRequest((chunk) => chunk.includes(layout.watchMark(entryOf(held))));
      const waiting = later(new FairMutex(session, 'watch').acquire({ timeoutMs: layout.timeoutMs() * 5 }));
      await cut;
      await held.release();
      const lock = await waiting;
      await writeWhileHeld(register().url, lock);
      await lock.release();
    } finally {
      await close();
    }
  });
});

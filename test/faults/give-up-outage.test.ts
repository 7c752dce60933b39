import { describe, expect, it } from 'vitest';

import { LockTimeoutError, SessionLostError } from '../../recipes/errors.js';
import { FairMutex } from '../../recipes/mutex.js';
import { useScope } from '../harness/backends/scope.js';
import { standaloneLayouts, throughProxy } from '../harness/faults/layouts.js';
import { backendOf, entryOf } from '../harness/internals.js';
import { eventually, later, track } from '../harness/wait.js';

/**
 * A waiter gives up (timeout or abort) while the server does not answer it. Its entry must be deleted
 * before its acquire settles, so the give-up waits for the server: for its return, or for the session's
 * end, which takes the entry with it. Either way the acquire rejects with the give-up's error, and no
 * waiter is left behind in the queue.
 */
// The backends side by side (each waits on its own session timeouts); one test at a time on each.
describe.concurrent('giving up while the server does not answer', () => {
  describe.each(standaloneLayouts())('on $name', (layout) => {
    const scope = useScope(() => layout.fixture());

    it.sequential(
      'a waiter that gives up while cut off for less than the session rejects once its entry is deleted, and only then',
      async () => {
        const timeoutMs = layout.timeoutMs();
        const proxied = await throughProxy(layout, scope.namespace);
        try {
          const other = await scope.open();
          const held = await new FairMutex(other, 'brief').acquire();
          const stop = new AbortController();
          const reason = new Error('caller gave up');
          const waiting = track(later(new FairMutex(proxied.session, 'brief').acquire({ signal: stop.signal })));
          await eventually(
            'the waiter queued',
            async () => (await backendOf(other).list('brief')).length === 2,
            timeoutMs,
          );
          proxied.proxy.blackhole();
          stop.abort(reason);
          // Well within the session's deadline (the last answer came at most a heartbeat or keepalive
          // period, a quarter of the timeout, before the cut; the deadline is nine tenths after it).
          await new Promise((resolve) => setTimeout(resolve, timeoutMs / 4));
          expect(waiting.settled, 'settled before its entry could be deleted').toBe(false);
          expect((await backendOf(other).list('brief')).length, 'the waiter is still queued on the server').toBe(2);
          proxied.proxy.restore();
          await expect(waiting.promise).rejects.toBe(reason);
          expect(
            (await backendOf(other).list('brief')).map((entry) => entry.key),
            'only the holder is left',
          ).toEqual([entryOf(held).key]);
          expect(proxied.session.state).not.toBe('lost');
          await held.release();
        } finally {
          await proxied.close();
        }
      },
    );

    for (const how of ['timeout', 'abort'] as const) {
      it.sequential(
        `${how === 'abort' ? 'an' : 'a'} ${how} while no answer comes for longer than the session settles at the session's deadline, with the give-up's error`,
        async () => {
          const timeoutMs = layout.timeoutMs();
          const proxied = await throughProxy(layout, scope.namespace);
          const { session } = proxied;
          try {
            const stop = new AbortController();
            const reason = new Error('operator gave up');
            proxied.proxy.blackhole();
            // The enqueue goes out into the silence: whether its entry was written is not known.
            const startedAt = performance.now();
            const acquiring = later(
              new FairMutex(session, 'long').acquire(
                how === 'timeout' ? { timeoutMs: timeoutMs / 8 } : { signal: stop.signal },
              ),
            );
            if (how === 'abort') setTimeout(() => stop.abort(reason), timeoutMs / 8);
            const error = await acquiring.then(
              () => undefined,
              (failure: unknown) => failure,
            );
            if (how === 'abort') {
              expect(error).toBe(reason);
            } else {
              expect(error).toBeInstanceOf(LockTimeoutError);
              expect((error as LockTimeoutError).cause).toBeInstanceOf(SessionLostError);
            }
            expect(session.state).toBe('lost');
            // Not before the session's deadline (nothing could be withdrawn), and not long after it.
            expect(performance.now() - startedAt).toBeGreaterThanOrEqual(timeoutMs / 2);
            expect(performance.now() - startedAt).toBeLessThan(timeoutMs * 2);
            // Whatever the proxy held back reaches the server now, the enqueue included: it may still write
            // its entry if the server has not ended the session yet. The server ends it in its own time, and
            // the entry goes with it.
            proxied.proxy.restore();
            await eventually(
              'the server ended the session, and its entry with it',
              async () =>
                (await scope.fixture.liveSessions([session.id])).length === 0 &&
                (await scope.fixture.entries(scope.namespace)).length === 0,
              timeoutMs * 3,
            );
          } finally {
            await proxied.close();
          }
        },
      );
    }
  });
});

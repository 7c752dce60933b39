import { describe, expect, it } from 'vitest';

import type { Session } from '../../recipes/contract.js';
import { LockLostError, SessionLostError } from '../../recipes/errors.js';
import { FairMutex } from '../../recipes/mutex.js';
import { useScope } from '../harness/backends/scope.js';
import { standaloneLayouts } from '../harness/faults/layouts.js';
import { backendOf, internalsOf } from '../harness/internals.js';
import { eventually } from '../harness/wait.js';

/** Blocks the event loop, as a long garbage collection or a synchronous task would, until `until` (performance.now()). */
function stallUntil(until: number): void {
  while (performance.now() < until) {
    // busy: no timer, no socket, no other callback runs meanwhile
  }
}

/**
 * The session's deadline is a timer, and a stalled event loop runs timers late. A grant whose reply
 * is handled only after the deadline must not start a belief: by then the server may have expired the
 * session and granted the lock to someone else. The stall here sits between the enqueue's reply and
 * the grant, where only promise callbacks run, so the deadline timer cannot fire first.
 */
describe.each(standaloneLayouts())('an event-loop stall past the session deadline on $name', (layout) => {
  const scope = useScope(() => layout.fixture());

  it('a grant reached after the deadline comes with an aborted signal and a lost session', async () => {
    const session: Session = await scope.open();
    const backend = backendOf(session);
    const enqueue = backend.enqueue.bind(backend);
    backend.enqueue = async (...args) => {
      const enqueued = await enqueue(...args);
      stallUntil(internalsOf(session).deadline + 20);
      return enqueued;
    };
    // The enqueue at the tail that answers with the entries just ahead, where the backend has it.
    const enqueueAhead = backend.enqueueAhead?.bind(backend);
    if (enqueueAhead !== undefined)
      backend.enqueueAhead = async (...args) => {
        const enqueued = await enqueueAhead(...args);
        stallUntil(internalsOf(session).deadline + 20);
        return enqueued;
      };
    const lock = await new FairMutex(session, 'stalled').acquire();
    expect(lock.signal.aborted, 'a grant after the deadline must not be believed').toBe(true);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
    expect((lock.signal.reason as LockLostError).cause).toBeInstanceOf(SessionLostError);
    expect(session.state).toBe('lost');
    // The server lets the session run out on its own; its entry goes with it.
    await eventually(
      'the server expired the session',
      async () => (await scope.fixture.entries(scope.namespace)).length === 0,
      layout.timeoutMs() * 3,
    );
  });

  it('`held` reads the clock: after a stall past the deadline it is false before the deadline timer has run', async () => {
    const session = await scope.open();
    const lock = await new FairMutex(session, 'stalled-holder').acquire();
    expect(lock.held).toBe(true);
    stallUntil(internalsOf(session).deadline + 20);
    // No timer has run since the stall: the signal still says held; `held` must not.
    expect(lock.signal.aborted, 'the deadline timer had no chance to run').toBe(false);
    expect(lock.held).toBe(false);
    expect(lock.signal.aborted).toBe(true);
    expect(session.state).toBe('lost');
    await eventually(
      'the server expired the session',
      async () => (await scope.fixture.entries(scope.namespace)).length === 0,
      layout.timeoutMs() * 3,
    );
  });
});

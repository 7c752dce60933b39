import { describe, expect, it } from 'vitest';

import { FairMutex } from '../../recipes/mutex.js';
import { useScope } from '../harness/backends/scope.js';
import { useRegister, writeWhileHeld } from '../harness/checkers/fenced-writes.js';
import { layouts, throughProxy } from '../harness/faults/layouts.js';
import { backendOf, entryOf } from '../harness/internals.js';
import { eventually, later } from '../harness/wait.js';

/** A connection dropped and back well within the session timeout / lease TTL, with onSuspend 'wait'. */
describe.each(layouts)('short disconnect on $name', (layout) => {
  const scope = useScope(() => layout.fixture());
  const register = useRegister();

  it('the holder stays holder (suspended, then connected), its entry is confirmed, and the waiter is granted on release', async () => {
    const { proxy, session, close } = await throughProxy(layout, scope.namespace, { onSuspend: 'wait' });
    try {
      const states: string[] = [];
      session.on('state', (state) => states.push(state));
      const other = await scope.open();
      const held = await new FairMutex(session, 'short').acquire();
      await writeWhileHeld(register().url, held);
      const next = later(new FairMutex(other, 'short').acquire({ timeoutMs: layout.timeoutMs() * 5 }));
      await eventually(
        'waiter queued',
        async () => (await backendOf(other).list('short')).length === 2,
        layout.timeoutMs(),
      );
      proxy.drop();
      await eventually(
        'suspended, then connected again',
        () => states.includes('suspended') && session.state === 'connected',
        layout.timeoutMs(),
      );
      expect(states[0]).toBe('suspended');
      expect(states).not.toContain('lost');
      expect(held.signal.aborted).toBe(false);
      expect(await backendOf(session).confirm(entryOf(held))).toBe(true);
      await writeWhileHeld(register().url, held);
      await held.release();
      const lock = await next;
      await writeWhileHeld(register().url, lock);
      await lock.release();
    } finally {
      await close();
    }
  });
});

import { describe, expect, it } from 'vitest';

import { LeaderElection } from '../../recipes/election.js';
import { useScope } from '../harness/backends/scope.js';
import { standaloneLayouts, throughProxy } from '../harness/faults/layouts.js';
import { eventually } from '../harness/wait.js';

// An observer whose listing of the queue is stuck in an outage still gives up at once on abort, with
// the caller's reason, instead of at the session's deadline with the session's error.
describe.each(standaloneLayouts())('observe() cut off from $name', (layout) => {
  const scope = useScope(() => layout.fixture());

  it('gives up at once on abort while its listing is stuck', async () => {
    const { proxy, session, close } = await throughProxy(layout, scope.namespace);
    try {
      const stop = new AbortController();
      const observer = new LeaderElection(session, 'cut', { id: 'o' }).observe({ signal: stop.signal });
      proxy.blackhole();
      const sentBefore = proxy.bytesUp;
      const first = observer.next().then(
        () => 'yielded',
        (error: unknown) => error,
      );
      await eventually('the listing sent into the blackhole', () => proxy.bytesUp > sentBefore, layout.timeoutMs());
      const reason = new Error('enough');
      stop.abort(reason);
      // Well before the session's deadline could end the observation with SessionLostError.
      const told = await Promise.race([
        first,
        new Promise((resolve) => setTimeout(() => resolve('still waiting'), layout.timeoutMs() / 4)),
      ]);
      expect(told).toBe(reason);
      expect(session.state).not.toBe('lost');
      proxy.restore();
    } finally {
      await close();
    }
  });
});

import { describe, expect, it } from 'vitest';

import { LockTimeoutError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { useScope } from '../../harness/backends/scope.js';
import { standaloneLayouts, throughProxy } from '../../harness/faults/layouts.js';

/** `participants()` against a server that stops answering: its timeout and signal end the wait. */
describe.each(standaloneLayouts().map((layout) => [layout.name, layout] as const))(
  'participants() when %s stops answering',
  (_name, layout) => {
    const scope = useScope(() => layout.fixture());

    it('rejects with LockTimeoutError after timeoutMs, and with the reason when the signal aborts', async () => {
      const proxied = await throughProxy(layout, scope.namespace);
      try {
        const mutex = new FairMutex(proxied.session, 'jobs');
        expect(await mutex.participants({ timeoutMs: 5_000 })).toEqual([]);
        proxied.proxy.blackhole();
        const startedAt = performance.now();
        await expect(mutex.participants({ timeoutMs: 300 })).rejects.toBeInstanceOf(LockTimeoutError);
        expect(performance.now() - startedAt).toBeLessThan(2_000);
        const reason = new Error('operator gave up');
        const stop = new AbortController();
        setTimeout(() => stop.abort(reason), 100);
        await expect(mutex.participants({ signal: stop.signal })).rejects.toBe(reason);
      } finally {
        proxied.proxy.restore();
        await proxied.close();
      }
    });
  },
);

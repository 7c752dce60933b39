import { connect } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import { FairMutex } from '../../../recipes/mutex.js';
import { redisFixture } from '../../harness/backends/redis.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { eventually } from '../../harness/wait.js';

/**
 * A partitioned holder's guarded write that reaches the server late: sent while the network held it,
 * delivered after the holder's session expired and the next holder wrote. The store refuses it.
 */
describe('a late guarded write from a partitioned holder (Redis)', () => {
  const scope = useScope(redisFixture);

  it("is refused by the store when it arrives after the next holder's write", async () => {
    const port = Number(new URL(scope.fixture.url(scope.namespace)).port);
    const proxy = await TcpProxy.start({ port });
    // A long session timeout: the old holder's client does not give up before the partition heals.
    const old = await connect(`redis://${proxy.address}?namespace=${scope.namespace}`, { sessionTimeoutMs: 20_000 });
    try {
      const other = await scope.open();
      const held = await new FairMutex(old, 'late').acquire();
      const waiting = new FairMutex(other, 'late').acquire();
      await eventually('queued', async () => (await backendOf(other).list('late')).length === 2);
      proxy.blackhole();
      // Sent into the partition: the proxy holds its bytes.
      const late = backendOf(old).guardedWrite(entryOf(held), { type: 'put', name: 'period', value: 'old' });
      late.catch(() => undefined);
      await scope.fixture.expire(old); // its session ends on the server meanwhile
      const next = await waiting;
      await next.guarded.put('period', 'next');
      proxy.restore(); // the held request reaches the server now
      expect(await late).toBe(false);
      expect(await next.guarded.get('period')).toBe('next');
      await next.guarded.delete('period');
      await next.release();
    } finally {
      await old.close();
      await proxy.close();
    }
  });
});

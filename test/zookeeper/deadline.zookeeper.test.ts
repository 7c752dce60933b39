import { describe, expect, inject, it } from 'vitest';
import { FairMutex } from '../../recipes/mutex.js';
import { LockLostError, SessionLostError } from '../../recipes/errors.js';
import { connect } from '../../src/connect.js';
import { TcpProxy } from '../harness/proxy.js';
import { useScope } from '../support/scope.js';
import { zkFixture } from '../support/zookeeper.js';
import { eventually } from '../support/wait.js';

describe('the client-side session deadline on ZooKeeper', () => {
  const scope = useScope(() => zkFixture('zkStandalone'));
  const info = inject('zkStandalone');

  it('tells a partitioned holder that its lock is lost before the next holder is granted (5 trials)', async () => {
    const gaps: number[] = [];
    for (let trial = 0; trial < 5; trial += 1) {
      const proxy = await TcpProxy.start({ port: info.ports[0]! });
      const cutOff = await connect(`zk://${proxy.address}/${scope.namespace}`, { sessionTimeoutMs: info.sessionTimeoutMs });
      const other = await scope.open();
      try {
        const held = await new FairMutex(cutOff, 'partition').acquire();
        let abortedAt = Number.NaN;
        held.signal.addEventListener('abort', () => (abortedAt = performance.now()), { once: true });
        const next = new FairMutex(other, 'partition').acquire({ timeoutMs: info.sessionTimeoutMs * 10 }).then((lock) => ({ lock, grantedAt: performance.now() }));
        proxy.blackhole();
        const { lock, grantedAt } = await next;
        expect(held.signal.reason).toBeInstanceOf(LockLostError);
        expect((held.signal.reason as LockLostError).cause).toBeInstanceOf(SessionLostError);
        expect(cutOff.state).toBe('lost');
        expect(abortedAt).toBeLessThan(grantedAt);
        gaps.push(grantedAt - abortedAt);
        await lock.release();
      } finally {
        await cutOff.close();
        await proxy.close();
      }
    }
    // The smallest gap between the cut-off holder being told and the next grant, for the record.
    console.info(`partitioned holder told ${Math.min(...gaps).toFixed(0)} ms (smallest of 5) before the next grant`);
  }, 120_000);

  it('settles an acquire sent into a partition with SessionLostError once the deadline passes', async () => {
    const proxy = await TcpProxy.start({ port: info.ports[0]! });
    const cutOff = await connect(`zk://${proxy.address}/${scope.namespace}`, { sessionTimeoutMs: info.sessionTimeoutMs });
    try {
      proxy.blackhole();
      const started = performance.now();
      const error = await new FairMutex(cutOff, 'stuck').acquire().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SessionLostError);
      expect(performance.now() - started).toBeLessThan(info.sessionTimeoutMs * 3);
      expect(cutOff.state).toBe('lost');
      const closing = performance.now();
      await cutOff.close();
      expect(performance.now() - closing).toBeLessThan(info.sessionTimeoutMs);
      // Declared lost on our side first; the server lets the session run out a little later.
      await eventually('the server expired the session', async () => (await scope.fixture.entries(scope.namespace)).length === 0, info.sessionTimeoutMs * 2);
    } finally {
      await proxy.close();
    }
  });
});

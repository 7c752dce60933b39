import { describe, expect, inject, it } from 'vitest';
import { FairMutex } from '../../recipes/mutex.js';
import { connect } from '../../src/connect.js';
import { TcpProxy } from '../harness/proxy.js';
import { useScope } from '../support/scope.js';
import { eventually } from '../support/wait.js';
import { zkFixture } from '../support/zookeeper.js';

/**
 * A member that stops answering without closing the connection (a long GC pause, a stalled disk). The
 * ZooKeeper client never notices on its own; baton drops the silent connection so that the client
 * moves to a live member while the session can still be saved there.
 */
describe('a hung member of a ZooKeeper ensemble', () => {
  const scope = useScope(() => zkFixture('zkEnsemble'));

  it('the session moves to another member before its deadline, and the holder keeps its lock', async () => {
    const info = inject('zkEnsemble');
    const proxies = await Promise.all(info.ports.map((port) => TcpProxy.start({ port })));
    const session = await connect(`zk://${proxies.map((proxy) => proxy.address).join(',')}/${scope.namespace}`, {
      sessionTimeoutMs: info.sessionTimeoutMs,
    });
    try {
      const states: string[] = [];
      session.on('state', (state) => states.push(state));
      const held = await new FairMutex(session, 'hung').acquire();
      const hung = proxies.find((proxy) => proxy.connections > 0)!;
      hung.blackhole();
      await eventually('moved to another member', () => states.includes('suspended') && session.state === 'connected', info.sessionTimeoutMs * 2);
      expect(states).not.toContain('lost');
      expect(held.held).toBe(true);
      expect(await session.backend.confirm(held.entry)).toBe(true);
      expect(proxies.filter((proxy) => proxy !== hung && proxy.connections > 0)).toHaveLength(1);
      await held.release();
    } finally {
      await session.close();
      await Promise.all(proxies.map((proxy) => proxy.close()));
    }
  });
});

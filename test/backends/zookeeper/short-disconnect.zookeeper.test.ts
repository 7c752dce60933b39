import { connect } from 'baton-locks/testing';
import { describe, expect, inject, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { LockLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { remove } from '../../../src/backends/zookeeper/client.js';
import type { ConnectOptions } from '../../../src/connect.js';
import { useScope } from '../../harness/backends/scope.js';
import { useZkAdmin, zkFixture } from '../../harness/backends/zookeeper.js';
import { waiterVanishesAcrossReconnect } from '../../harness/faults/vanished-waiter.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { eventually, later } from '../../harness/wait.js';

/** Short disconnects (well under the session timeout) through the fault proxy. */
describe('ZooKeeper: a short disconnect, and what holders and waiters see', () => {
  const scope = useScope(() => zkFixture('zkStandalone'));
  const info = inject('zkStandalone');
  const zkAdmin = useZkAdmin(() => info.connectString);
  let proxy: TcpProxy;
  const proxied: Session[] = [];

  async function throughProxy(
    onSuspend: 'wait' | 'abort',
    more: ConnectOptions = {},
  ): Promise<{ session: Session; states: string[] }> {
    proxy = await TcpProxy.start({ port: info.ports[0]! });
    const session = await connect(`zk://${proxy.address}/${scope.namespace}`, {
      sessionTimeoutMs: info.sessionTimeoutMs,
      onSuspend,
      ...more,
    });
    proxied.push(session);
    const states: string[] = [];
    session.on('state', (state) => states.push(state));
    return { session, states };
  }

  async function cleanup(): Promise<void> {
    await Promise.all(proxied.splice(0).map((session) => session.close()));
    await proxy.close();
  }

  it("onSuspend 'abort': the holder is told at once and its entry goes back when the server is reachable", async () => {
    try {
      const { session, states } = await throughProxy('abort');
      const other = await scope.open();
      const held = await new FairMutex(session, 'abort').acquire();
      const next = later(new FairMutex(other, 'abort').acquire({ timeoutMs: info.sessionTimeoutMs * 5 }));
      await eventually('waiter queued', async () => (await backendOf(other).list('abort')).length === 2);
      proxy.drop();
      await eventually('holder told', () => held.signal.aborted, info.sessionTimeoutMs);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      const lock = await next;
      expect(states).toContain('suspended');
      expect(session.state).toBe('connected'); // the session itself lives on
      await lock.release();
    } finally {
      await cleanup();
    }
  });

  it('a holder whose entry was deleted while it was cut off loses the lock when it reconnects', async () => {
    try {
      const { session } = await throughProxy('wait');
      const held = await new FairMutex(session, 'deleted').acquire();
      proxy.blackhole();
      await remove(zkAdmin(), entryOf(held).key);
      proxy.drop();
      proxy.restore();
      await eventually('holder told', () => held.signal.aborted, info.sessionTimeoutMs);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect(session.state).toBe('connected');
      await held.release();
    } finally {
      await cleanup();
    }
  });

  it('a waiter cut off while its predecessor is released is still woken after it reconnects', async () => {
    try {
      const { session } = await throughProxy('wait');
      const holder = await scope.open();
      const held = await new FairMutex(holder, 'rewatch').acquire();
      const waiting = later(new FairMutex(session, 'rewatch').acquire({ timeoutMs: info.sessionTimeoutMs * 5 }));
      await eventually('waiter watching', async () =>
        (await scope.fixture.watched(scope.namespace)).includes(entryOf(held).key),
      );
      proxy.blackhole();
      await held.release();
      proxy.drop();
      proxy.restore();
      const lock = await waiting;
      expect(lock.held).toBe(true);
      await lock.release();
    } finally {
      await cleanup();
    }
  });

  it.each(['fail', 'requeue'] as const)(
    "a waiter whose entry vanished while it was cut off is told at the reconnect (onWaiterLost '%s')",
    async (policy) => {
      try {
        const { session } = await throughProxy('wait', { onWaiterLost: policy });
        const holder = await scope.open();
        await waiterVanishesAcrossReconnect(
          {
            waiter: session,
            proxy,
            holder,
            removeEntry: (key) => remove(zkAdmin(), key),
            reconnectMs: info.sessionTimeoutMs,
          },
          policy,
        );
      } finally {
        await cleanup();
      }
    },
  );
});

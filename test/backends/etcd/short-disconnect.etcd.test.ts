import { connect } from 'baton-locks/testing';
import { Etcd3 } from 'etcd3';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { LeaderElection } from '../../../recipes/election.js';
import { LockLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import type { ConnectOptions } from '../../../src/connect.js';
import { etcdFixture } from '../../harness/backends/etcd.js';
import { useScope } from '../../harness/backends/scope.js';
import { waiterVanishesAcrossReconnect } from '../../harness/faults/vanished-waiter.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { eventually, later } from '../../harness/wait.js';

/** Short disconnects (well under the lease TTL) through the fault proxy. */
describe('etcd: a short disconnect, and what holders see', () => {
  const scope = useScope(() => etcdFixture('etcdStandalone'));
  const info = inject('etcdStandalone');
  const ttlMs = info.ttlSeconds * 1_000;
  let admin: Etcd3;
  let proxy: TcpProxy;
  let session: Session | undefined;
  beforeAll(() => {
    admin = new Etcd3({ hosts: info.endpoints });
  });
  afterAll(() => admin.close());

  async function throughProxy(
    onSuspend: 'wait' | 'abort',
    more: ConnectOptions = {},
  ): Promise<{ session: Session; states: string[] }> {
    proxy = await TcpProxy.start({ port: Number(new URL(info.endpoints[0]!).port) });
    session = await connect(`etcd://${proxy.address}/${scope.namespace}`, {
      ttlSeconds: info.ttlSeconds,
      onSuspend,
      ...more,
    });
    const states: string[] = [];
    session.on('state', (state) => states.push(state));
    return { session, states };
  }

  async function cleanup(): Promise<void> {
    await session?.close();
    await proxy.close();
  }

  it('an observer waiting on an empty queue gives up at once on abort, even while the server is unreachable', async () => {
    try {
      const { session } = await throughProxy('wait');
      const stop = new AbortController();
      const observer = new LeaderElection(session, 'quiet', { id: 'x' }).observe({ signal: stop.signal });
      expect((await observer.next()).value).toBeNull();
      proxy.blackhole();
      const next = later(observer.next());
      const reason = new Error('operator pressed Ctrl-C');
      stop.abort(reason);
      // Well within the session's deadline, which is when a request to an unreachable server gives up.
      await expect(
        Promise.race([next, new Promise((resolve) => setTimeout(resolve, ttlMs / 4, 'still waiting'))]),
      ).rejects.toBe(reason);
      proxy.restore();
    } finally {
      await cleanup();
    }
  });

  it("onSuspend 'abort': the holder is told at once and its entry goes back when the server is reachable", async () => {
    try {
      const { session } = await throughProxy('abort');
      const other = await scope.open();
      const held = await new FairMutex(session, 'abort').acquire();
      const next = later(new FairMutex(other, 'abort').acquire({ timeoutMs: ttlMs * 5 }));
      await eventually('waiter queued', async () => (await backendOf(other).list('abort')).length === 2);
      proxy.drop();
      await eventually('holder told', () => held.signal.aborted, ttlMs);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      await (await next).release();
      expect(session.state).not.toBe('lost');
    } finally {
      await cleanup();
    }
  });

  it('a holder whose key was deleted while it was cut off loses the lock when it is back', async () => {
    try {
      const { session, states } = await throughProxy('wait');
      const held = await new FairMutex(session, 'deleted').acquire();
      proxy.blackhole();
      await admin.delete().key(entryOf(held).key);
      proxy.drop();
      proxy.restore();
      await eventually('holder told', () => held.signal.aborted, ttlMs);
      expect(held.signal.reason).toBeInstanceOf(LockLostError);
      expect(states).toContain('suspended');
      await held.release();
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
            removeEntry: async (key) => void (await admin.delete().key(key)),
            reconnectMs: ttlMs,
          },
          policy,
        );
      } finally {
        await cleanup();
      }
    },
  );
});

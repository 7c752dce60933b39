import { connect, zkProbeOf } from 'baton-locks/testing';
import { describe, expect, inject, it } from 'vitest';

import { SessionLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { useScope } from '../../harness/backends/scope.js';
import { zkFixture } from '../../harness/backends/zookeeper.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { eventually } from '../../harness/wait.js';

describe('the client-side session deadline on ZooKeeper', () => {
  const scope = useScope(() => zkFixture('zkStandalone'));
  const info = inject('zkStandalone');

  it('settles an acquire sent into a partition with SessionLostError once the deadline passes', async () => {
    const proxy = await TcpProxy.start({ port: info.ports[0]! });
    const cutOff = await connect(`zk://${proxy.address}/${scope.namespace}`, {
      sessionTimeoutMs: info.sessionTimeoutMs,
    });
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
      await eventually(
        'the server expired the session',
        async () => (await scope.fixture.entries(scope.namespace)).length === 0,
        info.sessionTimeoutMs * 2,
      );
    } finally {
      await proxy.close();
    }
  });

  it('heartbeats answered more slowly than their interval keep the session, with a margin as large as an ensemble needs', async () => {
    const timeoutMs = info.sessionTimeoutMs;
    const everyMs = timeoutMs / 6;
    const proxy = await TcpProxy.start({ port: info.ports[0]! });
    // A margin that covers an interval and more, as README advises for sessions on followers.
    const slow = await connect(`zk://${proxy.address}/${scope.namespace}`, {
      sessionTimeoutMs: timeoutMs,
      deadlineMarginMs: Math.round(timeoutMs * 0.3),
    });
    try {
      const states: string[] = [];
      slow.on('state', (state) => states.push(state));
      const held = await new FairMutex(slow, 'slow').acquire();
      // Every answer comes 1.5 intervals late: short of the third of the timeout after which a silent
      // connection is dropped, long enough that heartbeats sent one at a time would each wait for the
      // last answer, and be credited one interval late each time.
      proxy.delayReplies(Math.round(everyMs * 1.5));
      await new Promise((resolve) => setTimeout(resolve, timeoutMs * 3));
      proxy.delayReplies(0);
      expect(states).toEqual([]);
      expect(held.held).toBe(true);
      expect(await backendOf(slow).confirm(entryOf(held))).toBe(true);
      await held.release();
    } finally {
      await slow.close();
      await proxy.close();
    }
  });

  it('a reconnect counts from when its connect request was written, before its answer was read', async () => {
    const proxy = await TcpProxy.start({ port: info.ports[0]! });
    const session = await connect(`zk://${proxy.address}/${scope.namespace}`, {
      sessionTimeoutMs: info.sessionTimeoutMs,
    });
    try {
      const driver = zkProbeOf(session).view;
      const opened = driver.connectingAt;
      let reconnectedAt = Number.NaN;
      session.on('state', (state) => {
        if (state === 'connected') reconnectedAt = performance.now();
      });
      proxy.delayReplies(50); // the connect's answer arrives a little after its request left
      const droppedAt = performance.now();
      proxy.drop();
      await eventually('reconnected', () => !Number.isNaN(reconnectedAt), info.sessionTimeoutMs);
      expect(driver.connectingAt).toBeGreaterThan(Math.max(opened, droppedAt));
      expect(driver.connectingAt).toBeLessThanOrEqual(reconnectedAt - 50);
      expect(session.state).toBe('connected');
    } finally {
      proxy.delayReplies(0);
      await session.close();
      await proxy.close();
    }
  });
});

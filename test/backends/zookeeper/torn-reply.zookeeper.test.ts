import { connect } from 'baton-locks/testing';
import { describe, expect, inject, it } from 'vitest';

import type { SessionState } from '../../../recipes/contract.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { useScope } from '../../harness/backends/scope.js';
import { zkFixture } from '../../harness/backends/zookeeper.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { eventually, later } from '../../harness/wait.js';

/**
 * A connection that dies in the middle of a reply (a member that hangs mid-write, a network fault),
 * which baton then drops for its silence. node-zookeeper-client keeps the torn frame's bytes and would
 * read them as the start of the next connection's first reply, the one that says which session it is.
 */
describe('a ZooKeeper connection that dies in the middle of a reply', () => {
  const scope = useScope(() => zkFixture('zkStandalone'));

  it('the next connection starts from a clean frame: the session comes back and keeps its lock', async () => {
    const info = inject('zkStandalone');
    const proxy = await TcpProxy.start({ port: info.ports[0]! });
    const session = await connect(`zk://${proxy.address}/${scope.namespace}`, {
      sessionTimeoutMs: info.sessionTimeoutMs,
    });
    try {
      const states: SessionState[] = [];
      session.on('state', (state) => states.push(state));
      const id = session.id;
      const held = await new FairMutex(session, 'torn').acquire();
      proxy.truncateNextReply();
      // Its reply is the one torn (or a heartbeat's is); it is sent again on the next connection.
      const listing = later(backendOf(session).list('torn'));
      await eventually(
        'back on a new connection',
        () => states.includes('suspended') && session.state === 'connected',
        info.sessionTimeoutMs * 2,
      );
      expect(await listing).toHaveLength(1);
      expect(states).not.toContain('lost');
      expect(session.id).toBe(id);
      expect(held.held).toBe(true);
      expect(await backendOf(session).confirm(entryOf(held))).toBe(true);
      await held.release();
    } finally {
      await session.close();
      await proxy.close();
    }
  });
});

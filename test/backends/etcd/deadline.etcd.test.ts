import { connect } from 'baton-locks/testing';
import { describe, expect, inject, it } from 'vitest';

import { SessionLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { etcdFixture } from '../../harness/backends/etcd.js';
import { useScope } from '../../harness/backends/scope.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { eventually } from '../../harness/wait.js';

describe('the client-side lease deadline on etcd', () => {
  const scope = useScope(() => etcdFixture('etcdStandalone'));
  const info = inject('etcdStandalone');
  const port = (): number => Number(new URL(info.endpoints[0]!).port);

  it('settles an acquire sent into a partition with SessionLostError once the deadline passes', async () => {
    const proxy = await TcpProxy.start({ port: port() });
    const cutOff = await connect(`etcd://${proxy.address}/${scope.namespace}`, { ttlSeconds: info.ttlSeconds });
    try {
      const holder = await scope.open();
      const held = await new FairMutex(holder, 'stuck').acquire();
      const waiting = new FairMutex(cutOff, 'stuck').acquire().catch((e: unknown) => e);
      await new Promise((resolve) => setTimeout(resolve, 100));
      proxy.blackhole();
      const fresh = await new FairMutex(cutOff, 'stuck-2').acquire().catch((e: unknown) => e);
      expect(fresh).toBeInstanceOf(SessionLostError);
      expect(await waiting).toBeInstanceOf(SessionLostError);
      await held.release();
      const closing = performance.now();
      await cutOff.close();
      expect(performance.now() - closing).toBeLessThan(info.ttlSeconds * 1_000);
      // Declared lost on our side first; the server lets the lease run out a little later.
      await eventually(
        'the server expired the lease',
        async () => (await scope.fixture.entries(scope.namespace)).length === 0,
        info.ttlSeconds * 2_000,
      );
    } finally {
      await proxy.close();
    }
  });
});

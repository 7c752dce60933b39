import { connect } from 'baton-locks/testing';
import { describe, expect, it } from 'vitest';

import { SessionLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import type { ConnectOptions } from '../../../src/connect.js';
import { etcdFixture } from '../../harness/backends/etcd.js';
import type { Fixture } from '../../harness/backends/fixture.js';
import { mysqlFixture } from '../../harness/backends/mysql.js';
import { postgresFixture } from '../../harness/backends/postgres.js';
import { redisFixture } from '../../harness/backends/redis.js';
import { useScope } from '../../harness/backends/scope.js';
import { zkFixture } from '../../harness/backends/zookeeper.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { eventually } from '../../harness/wait.js';

/** The fixture's URL for this namespace with its host and port replaced by the proxy's. */
function throughProxy(fixture: Fixture, namespace: string, proxyAddress: string): string {
  const url = new URL(fixture.url(namespace));
  url.host = proxyAddress;
  return url.toString();
}

/**
 * A partitioned holder's guarded write that reaches the server late: sent while the network held it,
 * delivered after the holder's session expired and the next holder wrote. The store refuses it. The
 * old holder's session timeout is long, so that its own client does not give up before the partition
 * heals: what refuses the write is the store's check, not the holder's care.
 */
describe.each([
  { name: 'Redis', fixture: redisFixture, long: { sessionTimeoutMs: 20_000 }, refusal: 'check' },
  { name: 'PostgreSQL', fixture: postgresFixture, long: { sessionTimeoutMs: 20_000 }, refusal: 'check' },
  { name: 'MySQL', fixture: mysqlFixture, long: { sessionTimeoutMs: 20_000 }, refusal: 'check' },
  { name: 'etcd', fixture: () => etcdFixture('etcdStandalone'), long: { ttlSeconds: 20 }, refusal: 'check' },
  // ZooKeeper binds every request to its session: the server ends the expired session's connection, and
  // the held request dies with it before the multi's check is reached (that check: zookeeper.test.ts).
  {
    name: 'ZooKeeper',
    fixture: () => zkFixture('zkStandalone'),
    long: { sessionTimeoutMs: 20_000 },
    refusal: 'session',
  },
])(
  'a late guarded write from a partitioned holder ($name)',
  ({ fixture, long, refusal }: { fixture: () => Fixture; long: ConnectOptions; refusal: string }) => {
    const scope = useScope(fixture);

    it("is refused by the store when it arrives after the next holder's write", async () => {
      const port = Number(new URL(scope.fixture.url(scope.namespace)).port);
      const proxy = await TcpProxy.start({ port });
      const old = await connect(throughProxy(scope.fixture, scope.namespace, proxy.address), {
        ...scope.fixture.options,
        ...long,
      });
      let next: Awaited<ReturnType<FairMutex['acquire']>> | undefined;
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
        next = await waiting;
        await next.guarded.put('period', 'next');
        proxy.restore(); // the held request reaches the server now (or, on ZooKeeper, its closed session)
        if (refusal === 'check') expect(await late).toBe(false);
        else await expect(late).rejects.toBeInstanceOf(SessionLostError);
        expect(await next.guarded.get('period')).toBe('next');
      } finally {
        await next?.guarded.delete('period');
        await next?.release();
        await old.close();
        await proxy.close();
      }
    });
  },
);

import { describe, expect, inject, it } from 'vitest';
import { FairMutex } from '../../recipes/mutex.js';
import { connect, type ConnectOptions } from '../../src/connect.js';
import type { BatonSession } from '../../src/session.js';
import { TcpProxy } from '../harness/proxy.js';
import { etcdFixture } from '../support/etcd.js';
import type { Fixture } from '../support/fixture.js';
import { useScope } from '../support/scope.js';
import { eventually, later } from '../support/wait.js';
import { zkFixture } from '../support/zookeeper.js';

interface Target {
  readonly name: string;
  fixture(): Fixture;
  port(): number;
  url(address: string, namespace: string): string;
  options(): ConnectOptions;
}

const targets: Target[] = [
  {
    name: 'ZooKeeper',
    fixture: () => zkFixture('zkStandalone'),
    port: () => inject('zkStandalone').ports[0]!,
    url: (address, namespace) => `zk://${address}/${namespace}`,
    options: () => ({ sessionTimeoutMs: inject('zkStandalone').sessionTimeoutMs }),
  },
  {
    name: 'etcd',
    fixture: () => etcdFixture('etcdStandalone'),
    port: () => Number(new URL(inject('etcdStandalone').endpoints[0]!).port),
    url: (address, namespace) => `etcd://${address}/${namespace}`,
    options: () => ({ ttlSeconds: inject('etcdStandalone').ttlSeconds }),
  },
];

/** A connection cut right after a request reached the server, in the middle of a release or a wait. */
describe.each(targets)('connection loss mid-request on $name', (target) => {
  const scope = useScope(() => target.fixture());

  async function throughProxy(): Promise<{ proxy: TcpProxy; session: BatonSession }> {
    const proxy = await TcpProxy.start({ port: target.port() });
    return { proxy, session: await connect(target.url(proxy.address, scope.namespace), target.options()) };
  }

  it('a release whose reply is lost still deletes the entry, and the next waiter gets the lock', async () => {
    const { proxy, session } = await throughProxy();
    try {
      const other = await scope.open();
      const held = await new FairMutex(session, 'release').acquire();
      const next = later(new FairMutex(other, 'release').acquire({ timeoutMs: 20_000 }));
      await eventually('waiter queued', async () => (await other.backend.list('release')).length === 2);
      const key = held.entry.key.slice(held.entry.key.lastIndexOf('/') + 1);
      const cut = proxy.dropAfterNextRequest((chunk) => chunk.includes(key));
      const releasing = held.release();
      await cut;
      await releasing;
      expect(held.held).toBe(false);
      const lock = await next;
      expect((await other.backend.list('release')).map((e) => e.key)).toEqual([lock.entry.key]);
      await lock.release();
    } finally {
      await session.close();
      await proxy.close();
    }
  });

  it('a waiter whose watch request is cut is still woken when its predecessor goes', async () => {
    const { proxy, session } = await throughProxy();
    try {
      const holder = await scope.open();
      const held = await new FairMutex(holder, 'watch').acquire();
      const key = held.entry.key.slice(held.entry.key.lastIndexOf('/') + 1);
      // The waiter's first request naming the holder's entry is its watch on it.
      const cut = proxy.dropAfterNextRequest((chunk) => chunk.includes(key));
      const waiting = later(new FairMutex(session, 'watch').acquire({ timeoutMs: 20_000 }));
      await cut;
      await held.release();
      const lock = await waiting;
      expect(lock.held).toBe(true);
      await lock.release();
    } finally {
      await session.close();
      await proxy.close();
    }
  });
});

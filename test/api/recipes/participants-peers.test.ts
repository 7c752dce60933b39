import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';

import { LeaderElection } from '../../../recipes/election.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { etcdFixture } from '../../harness/backends/etcd.js';
import { useScope } from '../../harness/backends/scope.js';
import { zkFixture } from '../../harness/backends/zookeeper.js';
import {
  compileCuratorPeer,
  curatorPeer,
  etcdctlPeer,
  kazooPeer,
  requirePeers,
  stopAllPeers,
} from '../../harness/interop-peers.js';
import { eventually, later } from '../../harness/wait.js';

/** `participants()` lists the real peers' entries next to baton's, in the server's order. */
describe('participants() with Curator and kazoo on ZooKeeper', { timeout: 90_000 }, () => {
  const scope = useScope(() => zkFixture('zkStandalone'));
  const connectString = (): string => inject('zkStandalone').connectString;
  beforeAll(async () => {
    requirePeers('curator', 'kazoo');
    await compileCuratorPeer();
  }, 120_000);
  afterEach(stopAllPeers);

  it('a Curator holder, a kazoo waiter and a baton waiter, each named by its client', async () => {
    const path = `/${scope.namespace}/jobs`;
    const curator = await curatorPeer({ connectString: connectString(), path, recipe: 'mutex', id: 'curator-1' });
    curator.acquire();
    await curator.granted();
    const kazoo = await kazooPeer({ connectString: connectString(), path, recipe: 'mutex', id: 'kazoo-1' });
    kazoo.acquire();
    const session = await scope.open();
    const mutex = new FairMutex(session, 'jobs', { interop: 'kazoo' });
    await eventually('the kazoo peer queued', async () => (await mutex.participants()).length === 2);
    const waiting = later(mutex.acquire());
    await eventually('baton queued', async () => (await mutex.participants()).length === 3);
    const list = await mutex.participants({ timeoutMs: 5_000 });
    expect(list.map((p) => [p.role, p.client])).toEqual([
      ['holder', 'curator'],
      ['waiter', 'kazoo'],
      ['waiter', 'kazoo'],
    ]);
    expect(list[2]!.sessionId).toContain(session.id);
    expect(list[0]!.sessionId).not.toContain(session.id);
    await curator.release();
    await kazoo.granted();
    expect((await mutex.participants()).map((p) => p.role)).toEqual(['holder', 'waiter']);
    await kazoo.release();
    await (await waiting).release();
  });

  it("a Curator LeaderLatch leader, with its id, ahead of baton's candidate", async () => {
    const path = `/${scope.namespace}/leader`;
    const latch = await curatorPeer({ connectString: connectString(), path, recipe: 'latch', id: 'curator-leader' });
    latch.acquire();
    await latch.granted();
    const election = new LeaderElection(await scope.open(), 'leader', { id: 'baton-2' });
    const campaign = later(election.campaign());
    await eventually('baton queued', async () => (await election.participants()).length === 2);
    expect((await election.participants()).map((p) => [p.role, p.client, p.id])).toEqual([
      ['holder', 'curator', 'curator-leader'],
      ['waiter', 'curator', 'baton-2'],
    ]);
    await latch.release();
    await (await campaign).resign();
  });
});

describe("participants() with etcd's Go Mutex (etcdctl lock)", { timeout: 60_000 }, () => {
  const scope = useScope(() => etcdFixture('etcdStandalone'));
  beforeAll(() => requirePeers('etcdctl'));
  afterEach(stopAllPeers);

  it('the Go holder as etcd-go, then the baton waiter', async () => {
    const go = await etcdctlPeer({
      endpoints: inject('etcdStandalone').endpoints,
      name: `${scope.namespace}/jobs/#`,
      recipe: 'lock',
      id: 'go-1',
    });
    go.acquire();
    await go.granted();
    const session = await scope.open();
    const mutex = new FairMutex(session, 'jobs');
    const waiting = later(mutex.acquire());
    await eventually('baton queued', async () => (await mutex.participants()).length === 2);
    const list = await mutex.participants();
    expect(list.map((p) => [p.role, p.client])).toEqual([
      ['holder', 'etcd-go'],
      ['waiter', 'baton'],
    ]);
    expect(list[1]!.sessionId).toContain(session.id);
    await go.release();
    await (await waiting).release();
  });
});

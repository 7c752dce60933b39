import { connect } from 'baton-locks/testing';
import { Etcd3 } from 'etcd3';
import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';

import { LeaderElection } from '../../recipes/election.js';
import { InvalidArgumentError, LockDowngradeError, PermitsMismatchError } from '../../recipes/errors.js';
import { FairMutex } from '../../recipes/mutex.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import { Semaphore } from '../../recipes/semaphore.js';
import { inspectQueue } from '../../src/inspect.js';
import { etcdFixture } from '../harness/backends/etcd.js';
import { useScope } from '../harness/backends/scope.js';
import { etcdctlPeer, type Peer, requirePeers, stopAllPeers } from '../harness/interop-peers.js';
import { eventually } from '../harness/wait.js';
import { campaignContender, enqueue, exclusionAndFifo, lockContender, oneLeader, staysWaiting } from './scenarios.js';

/**
 * baton next to etcd's Go recipes (`concurrency.Mutex` and `Election`, run by etcdctl 3.4's `lock` and
 * `elect`) on one prefix: Go waits for baton's keys, baton for Go's. See docs/interop.md.
 */
describe("etcd: baton next to etcd's Go recipes on the same prefix", { timeout: 90_000 }, () => {
  const scope = useScope(() => etcdFixture('etcdStandalone'));
  const endpoints = (): string[] => inject('etcdStandalone').endpoints;
  /** What to give Go's NewMutex / NewElection (and etcdctl) for baton's lock `name`. */
  const goPrefix = (name: string): string => `${scope.namespace}/${name}/#`;
  const queued = (name: string) => async (): Promise<number> => {
    const client = new Etcd3({ hosts: endpoints() });
    try {
      return (
        await client
          .getAll()
          .prefix(`${goPrefix(name)}/`)
          .keys()
      ).length;
    } finally {
      client.close();
    }
  };
  const goLock =
    (name: string) =>
    (n: number | string): Promise<Peer> =>
      etcdctlPeer({ endpoints: endpoints(), name: goPrefix(name), recipe: 'lock', id: `go-${n}` });

  beforeAll(() => requirePeers('etcdctl'));
  afterEach(stopAllPeers);

  it('FairMutex and Go Mutex (etcdctl lock): excluded both ways, handed off, FIFO across clients', async () => {
    await exclusionAndFifo(
      {
        baton: async (n) => lockContender(`baton-${n}`, new FairMutex(await scope.open(), 'jobs')),
        peer: goLock('jobs'),
      },
      queued('jobs'),
    );
  });

  it('the write lock of a ReadWriteLock and Go Mutex: excluded both ways, handed off, FIFO across clients', async () => {
    await exclusionAndFifo(
      {
        baton: async (n) =>
          lockContender(`baton-write-${n}`, new ReadWriteLock(await scope.open(), 'config').writeLock),
        peer: goLock('config'),
      },
      queued('config'),
    );
  });

  it('readers wait for a Go Mutex holder, and it waits for them', async () => {
    const go = await goLock('config')('m');
    go.acquire();
    await go.granted();
    const reader = lockContender('baton-read', new ReadWriteLock(await scope.open(), 'config').readLock);
    await enqueue(reader, queued('config'), 2);
    await staysWaiting(reader, 'a Go Mutex holds');
    await go.release();
    await reader.granted();
    const next = await goLock('config')('n');
    await enqueue(next, queued('config'), 2);
    await staysWaiting(next, 'a baton reader holds');
    await reader.release();
    await next.granted();
    await next.release();
  });

  it('LeaderElection and Go Election (etcdctl elect): one leader at a time, named alike by both clients', async () => {
    await oneLeader({
      baton: async (id) => {
        const election = new LeaderElection(await scope.open(), 'leader', { id });
        return { contender: campaignContender(id, election), election };
      },
      peer: (id) => etcdctlPeer({ endpoints: endpoints(), name: goPrefix('leader'), recipe: 'elect', id }),
      observer: new LeaderElection(await scope.open(), 'leader', { id: 'observer' }),
      queued: queued('leader'),
    });
  });

  it('a downgrade with a Go waiter queued behind the writer is refused; the writer keeps its lock and nothing is left', async () => {
    const rw = new ReadWriteLock(await scope.open(), 'config');
    const write = await rw.writeLock.acquire();
    const go = await goLock('config')('w');
    await enqueue(go, queued('config'), 2);
    await expect(rw.downgrade(write)).rejects.toBeInstanceOf(LockDowngradeError);
    expect(write.held).toBe(true);
    expect(await queued('config')()).toBe(2); // the read key was withdrawn
    await staysWaiting(go, 'the baton writer still holds');
    await write.release();
    await go.granted();
    await go.release();
  });

  it('a Semaphore granted with a Go waiter queued behind it refuses (another recipe on its name); nothing of it is left', async () => {
    const holder = await new Semaphore(await scope.open(), 'slots', { permits: 1 }).acquire();
    const waiting = new Semaphore(await scope.open(), 'slots', { permits: 1 }).acquire();
    await eventually('the second semaphore queued', async () => (await queued('slots')()) === 2, 10_000);
    const go = await goLock('slots')('s');
    await enqueue(go, queued('slots'), 3);
    await holder.release();
    const refused = await waiting.catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(PermitsMismatchError);
    expect((refused as PermitsMismatchError).found).toBe('exclusive');
    await go.granted();
    expect(await queued('slots')()).toBe(1); // only Go's key: the semaphore's entries were withdrawn
    await go.release();
  });

  it('a Go waiter that queues after a downgrade waits for the read', async () => {
    const rw = new ReadWriteLock(await scope.open(), 'config');
    const read = await rw.downgrade(await rw.writeLock.acquire());
    const go = await goLock('config')('r');
    await enqueue(go, queued('config'), 2);
    await staysWaiting(go, 'the downgraded read holds');
    await read.release();
    await go.granted();
    await go.release();
  });

  it("baton inspect lists Go's keys as entries of etcd-go", async () => {
    const session = await scope.open();
    const held = await new FairMutex(session, 'jobs').acquire();
    const go = await etcdctlPeer({
      endpoints: endpoints(),
      name: goPrefix('jobs'),
      recipe: 'elect',
      id: 'go-proposal',
    });
    await enqueue(go, queued('jobs'), 2);
    const view = await inspectQueue(session, 'jobs');
    expect(view.entries.map((e) => [e.role, e.client, e.kind, e.data])).toEqual([
      ['holder', 'baton', 'lock', ''],
      ['waiter', 'etcd-go', 'exclusive', 'go-proposal'],
    ]);
    await held.release();
    await go.granted();
    await go.release();
  });

  it('the interop option is refused on etcd and on memory, where no peer needs it', async () => {
    const session = await scope.open();
    for (const make of [
      () => new FairMutex(session, 'jobs', { interop: 'curator' }),
      () => new LeaderElection(session, 'x', { id: 'x', interop: 'kazoo' }),
    ]) {
      expect(make).toThrow(InvalidArgumentError);
      expect(make).toThrow(/see baton's keys as they are/);
    }
    const memory = await connect('memory://interop-option');
    try {
      expect(() => new ReadWriteLock(memory, 'cfg', { interop: 'kazoo' })).toThrow(/see baton's keys as they are/);
    } finally {
      await memory.close();
    }
  });
});

describe("etcd cluster: baton next to etcd's Go Mutex", { timeout: 90_000 }, () => {
  const scope = useScope(() => etcdFixture('etcdCluster'));
  const endpoints = (): string[] => inject('etcdCluster').endpoints;
  const queued = async (): Promise<number> => {
    const client = new Etcd3({ hosts: endpoints() });
    try {
      return (await client.getAll().prefix(`${scope.namespace}/jobs/#/`).keys()).length;
    } finally {
      client.close();
    }
  };

  beforeAll(() => requirePeers('etcdctl'));
  afterEach(stopAllPeers);

  it('FairMutex and Go Mutex (etcdctl lock) on a 3-member cluster: excluded both ways, handed off, FIFO', async () => {
    await exclusionAndFifo(
      {
        baton: async (n) => lockContender(`baton-${n}`, new FairMutex(await scope.open(), 'jobs')),
        peer: (n) =>
          etcdctlPeer({ endpoints: endpoints(), name: `${scope.namespace}/jobs/#`, recipe: 'lock', id: `go-${n}` }),
      },
      queued,
    );
  });
});

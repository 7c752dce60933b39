import { afterEach, beforeAll, describe, expect, inject, it } from 'vitest';

import { LeaderElection } from '../../recipes/election.js';
import { InvalidArgumentError } from '../../recipes/errors.js';
import type { Interop, LockInterop } from '../../recipes/interop.js';
import { FairMutex } from '../../recipes/mutex.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import { inspectQueue } from '../../src/inspect.js';
import { useScope } from '../harness/backends/scope.js';
import { zkFixture } from '../harness/backends/zookeeper.js';
import {
  compileCuratorPeer,
  curatorPeer,
  type CuratorRecipe,
  kazooPeer,
  type KazooRecipe,
  type Peer,
  requirePeers,
  stopAllPeers,
} from '../harness/interop-peers.js';
import { withZkClient } from '../harness/servers/clean.js';
import {
  campaignContender,
  type Contender,
  enqueue,
  exclusionAndFifo,
  lockContender,
  oneLeader,
  type RwClient,
  sharedReadsExclusiveWrites,
  staysWaiting,
} from './scenarios.js';

/**
 * baton next to the real Curator 5.4 (Java) and kazoo 2.8 (Python) on one ZooKeeper path: never two
 * holders, FIFO across clients, one leader named alike by both. See docs/interop.md.
 */
// JVM and Python peers start in about a second each on 2 cores; a scenario starts up to six of them.
describe('ZooKeeper: baton next to Curator and kazoo on the same path', { timeout: 90_000 }, () => {
  const scope = useScope(() => zkFixture('zkStandalone'));
  const connectString = (): string => inject('zkStandalone').connectString;
  const dir = (name: string): string => `/${scope.namespace}/${name}`;
  /** How many children the lock's directory has (none while it does not exist). */
  const queued = (name: string) => async (): Promise<number> =>
    withZkClient(
      connectString(),
      (client) =>
        new Promise<number>((resolve) =>
          client.getChildren(dir(name), (error, children) => resolve(error ? 0 : children.length)),
        ),
    );

  beforeAll(async () => {
    requirePeers('curator', 'kazoo');
    await compileCuratorPeer();
  }, 120_000);
  afterEach(stopAllPeers);

  const curator =
    (name: string, recipe: CuratorRecipe) =>
    (n: number | string): Promise<Peer> =>
      curatorPeer({ connectString: connectString(), path: dir(name), recipe, id: `curator-${n}` });
  const kazoo =
    (name: string, recipe: KazooRecipe) =>
    (n: number | string): Promise<Peer> =>
      kazooPeer({ connectString: connectString(), path: dir(name), recipe, id: `kazoo-${n}` });
  const batonLock =
    (name: string, interop?: LockInterop) =>
    async (n: number): Promise<Contender> =>
      lockContender(
        `baton-${n}`,
        new FairMutex(await scope.open(), name, interop === undefined ? undefined : { interop }),
      );

  it('FairMutex and Curator InterProcessMutex: excluded both ways, handed off, FIFO across clients', async () => {
    await exclusionAndFifo({ baton: batonLock('jobs'), peer: curator('jobs', 'mutex') }, queued('jobs'));
  });

  it('FairMutex and Curator LeaderSelector: excluded both ways, handed off, FIFO across clients', async () => {
    await exclusionAndFifo({ baton: batonLock('jobs'), peer: curator('jobs', 'selector') }, queued('jobs'));
  });

  it("FairMutex with interop 'kazoo' and kazoo Lock: excluded both ways, handed off, FIFO across clients", async () => {
    await exclusionAndFifo({ baton: batonLock('jobs', 'kazoo'), peer: kazoo('jobs', 'mutex') }, queued('jobs'));
  });

  const batonRw = (name: string, interop?: LockInterop) => ({
    read: async () =>
      lockContender(
        'baton-read',
        new ReadWriteLock(await scope.open(), name, interop === undefined ? undefined : { interop }).readLock,
      ),
    write: async () =>
      lockContender(
        'baton-write',
        new ReadWriteLock(await scope.open(), name, interop === undefined ? undefined : { interop }).writeLock,
      ),
  });

  /**
   * `sharedReadsExclusiveWrites` with baton first and with the peer first, side by side on two paths:
   * each spends its time showing that waiters stay waiting, not on the CPU.
   */
  const bothWays = async (baton: (name: string) => RwClient, peer: (name: string) => RwClient): Promise<void> => {
    await Promise.all([
      sharedReadsExclusiveWrites(baton('config'), peer('config'), queued('config')),
      sharedReadsExclusiveWrites(peer('config-back'), baton('config-back'), queued('config-back')),
    ]);
  };

  it('ReadWriteLock and Curator InterProcessReadWriteLock: readers share, writers exclude, both ways', async () => {
    const peer = (name: string) => ({
      read: () => curator(name, 'read')('read'),
      write: () => curator(name, 'write')('write'),
    });
    await bothWays(batonRw, peer);
  });

  it("ReadWriteLock with interop 'kazoo' and kazoo ReadLock / WriteLock: readers share, writers exclude, both ways", async () => {
    // No kazoo reader ever waits with a writer queued behind it: kazoo 2.8 would wait for that writer
    // too and deadlock (python-zk/kazoo#649), whatever client the writer is.
    const peer = (name: string) => ({
      read: () => kazoo(name, 'read')('read'),
      write: () => kazoo(name, 'write')('write'),
    });
    await bothWays((name) => batonRw(name, 'kazoo'), peer);
  });

  it('ReadWriteLock with Curator InterProcessMutex entries: a mutex entry excludes readers and writers', async () => {
    // Curator's mutex and baton's read/write lock on one path: baton waits for the `lock-` entry.
    const mutex = await curator('config', 'mutex')('m');
    mutex.acquire();
    await mutex.granted();
    const reader = lockContender('baton-read', new ReadWriteLock(await scope.open(), 'config').readLock);
    await enqueue(reader, queued('config'), 2);
    await staysWaiting(reader, 'a Curator mutex holds');
    await mutex.release();
    await reader.granted();
    await reader.release();
  });

  const batonCandidate = (name: string, interop?: Interop) => async (id: string) => {
    const election = new LeaderElection(await scope.open(), name, {
      id,
      ...(interop === undefined ? {} : { interop }),
    });
    return { contender: campaignContender(id, election), election };
  };
  // An observer reads the leader as the campaigners' names make it: with their interop option.
  const observer = async (name: string, interop?: Interop): Promise<LeaderElection> =>
    new LeaderElection(await scope.open(), name, { id: 'observer', ...(interop === undefined ? {} : { interop }) });

  it('LeaderElection and Curator LeaderLatch: one leader at a time, named alike by both clients', async () => {
    await oneLeader({
      baton: batonCandidate('leader'),
      peer: (id) => curatorPeer({ connectString: connectString(), path: dir('leader'), recipe: 'latch', id }),
      observer: await observer('leader'),
      queued: queued('leader'),
    });
  });

  it("LeaderElection with interop 'curator-selector' and Curator LeaderSelector: one leader at a time, named alike", async () => {
    await oneLeader({
      baton: batonCandidate('leader', 'curator-selector'),
      peer: (id) => curatorPeer({ connectString: connectString(), path: dir('leader'), recipe: 'selector', id }),
      observer: await observer('leader', 'curator-selector'),
      queued: queued('leader'),
    });
  });

  it("LeaderElection with interop 'kazoo' and kazoo Election: one leader at a time, named alike", async () => {
    await oneLeader({
      baton: batonCandidate('leader', 'kazoo'),
      peer: (id) => kazooPeer({ connectString: connectString(), path: dir('leader'), recipe: 'election', id }),
      observer: await observer('leader', 'kazoo'),
      queued: queued('leader'),
    });
  });

  for (const [peerName, interop, start] of [
    [
      'Curator',
      undefined,
      (path: string) => curatorPeer({ connectString: connectString(), path, recipe: 'write', id: 'curator-writer' }),
    ],
    [
      'kazoo',
      'kazoo',
      (path: string) => kazooPeer({ connectString: connectString(), path, recipe: 'write', id: 'kazoo-writer' }),
    ],
  ] as const) {
    it(`a downgrade keeps a ${peerName} writer that queued behind the write lock waiting until the read is released`, async () => {
      const rw = new ReadWriteLock(await scope.open(), 'config', interop === undefined ? undefined : { interop });
      const write = await rw.writeLock.acquire();
      const writer = await start(dir('config'));
      await enqueue(writer, queued('config'), 2);
      await staysWaiting(writer, 'baton writes');
      const read = await rw.downgrade(write);
      expect(write.held).toBe(false);
      await staysWaiting(writer, 'baton reads after its downgrade');
      await read.release();
      await writer.granted();
      await writer.release();
    });
  }

  it('baton inspect lists the peers entries with the client whose names they have', async () => {
    const [c, k] = [await curator('mixed', 'mutex')('c'), await kazoo('mixed', 'mutex')('k')];
    const session = await scope.open();
    const held = await new FairMutex(session, 'mixed', { interop: 'kazoo' }).acquire();
    await enqueue(c, queued('mixed'), 2);
    await enqueue(k, queued('mixed'), 3);
    const view = await inspectQueue(session, 'mixed');
    expect(view.entries.map((e) => [e.role, e.client, e.kind])).toEqual([
      ['holder', 'kazoo', 'lock'],
      ['waiter', 'curator', 'lock'],
      ['waiter', 'kazoo', 'lock'],
    ]);
    expect(view.entries[2]!.data).toBe('kazoo-k');
    // Stopped before the release: Curator's and kazoo's locks do not see each other's entries.
    await Promise.all([c.stop(), k.stop()]);
    await held.release();
  });

  it('interop values are checked against the recipe, and accepted on ZooKeeper', async () => {
    const session = await scope.open();
    for (const interop of ['curator', 'kazoo'] as const) {
      expect(new FairMutex(session, 'jobs', { interop }).name).toBe('jobs');
      expect(new ReadWriteLock(session, 'cfg', { interop }).name).toBe('cfg');
    }
    for (const interop of ['curator', 'curator-selector', 'kazoo'] as const)
      expect(new LeaderElection(session, 'leader', { id: 'x', interop }).name).toBe('leader');
    expect(() => new FairMutex(session, 'jobs', { interop: 'curator-selector' as never })).toThrow(
      InvalidArgumentError,
    );
  });
});

describe('ZooKeeper ensemble: baton next to Curator and kazoo', { timeout: 90_000 }, () => {
  const scope = useScope(() => zkFixture('zkEnsemble'));
  const connectString = (): string => inject('zkEnsemble').connectString;
  const queued = async (): Promise<number> =>
    withZkClient(
      connectString(),
      (client) =>
        new Promise<number>((resolve) =>
          client.getChildren(`/${scope.namespace}/jobs`, (error, children) => resolve(error ? 0 : children.length)),
        ),
    );

  beforeAll(async () => {
    requirePeers('curator', 'kazoo');
    await compileCuratorPeer();
  }, 120_000);
  afterEach(stopAllPeers);

  it('FairMutex and Curator InterProcessMutex on a 3-node ensemble: excluded both ways, handed off, FIFO', async () => {
    // Each client connects to any member: the queue's order is the leader's, whichever member answers.
    await exclusionAndFifo(
      {
        baton: async (n) => lockContender(`baton-${n}`, new FairMutex(await scope.open(), 'jobs')),
        peer: (n) =>
          curatorPeer({
            connectString: connectString(),
            path: `/${scope.namespace}/jobs`,
            recipe: 'mutex',
            id: `curator-${n}`,
          }),
      },
      queued,
    );
  });
});

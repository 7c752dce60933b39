import { randomUUID } from 'node:crypto';

import { Etcd3 } from 'etcd3';
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest';

import {
  compileCuratorPeer,
  curatorPeer,
  etcdctlPeer,
  kazooPeer,
  type Peer,
  requirePeers,
  stopAllPeers,
} from '../harness/interop-peers.js';
import { zkRemoveTree, zkTree } from '../harness/servers/clean.js';
import { sleep } from '../harness/servers/process.js';
import { eventually } from '../harness/wait.js';

/**
 * The interop peers against each other only (no baton): each library's lock excludes a second holder
 * until the first releases, a waiter that gives up leaves nothing behind, and `leader()` reads the
 * leader of an election. Later interop tests put baton between them.
 */

/** How long a peer that must wait is watched for a grant it must not get. */
const NOT_GRANTED_MS = 400;

const zk = (): string => inject('zkStandalone').connectString;
const endpoints = (): string[] => inject('etcdStandalone').endpoints;

const zkPaths: string[] = [];
const etcdNames: string[] = [];

function zkPath(): string {
  const dir = `/baton-interop/${randomUUID()}`;
  zkPaths.push(dir);
  return dir;
}

function etcdName(): string {
  const name = `baton-interop/${randomUUID()}`;
  etcdNames.push(name);
  return name;
}

/** The ephemeral nodes (queue entries) left under `dir`. */
async function zkEntries(dir: string): Promise<string[]> {
  return (await zkTree(zk(), dir)).filter((node) => node.ephemeralOwner !== 0n).map((node) => node.path);
}

async function etcdKeys(name: string): Promise<string[]> {
  const client = new Etcd3({ hosts: endpoints() });
  try {
    return await client.getAll().prefix(`${name}/`).keys();
  } finally {
    client.close();
  }
}

beforeAll(async () => {
  requirePeers('curator', 'kazoo', 'etcdctl');
  await compileCuratorPeer();
}, 120_000);

afterAll(async () => {
  await zkRemoveTree(zk(), '/baton-interop');
});

afterEach(async () => {
  await stopAllPeers();
  for (const dir of zkPaths.splice(0)) await zkRemoveTree(zk(), dir);
  if (etcdNames.length > 0) {
    const client = new Etcd3({ hosts: endpoints() });
    try {
      for (const name of etcdNames.splice(0)) await client.delete().prefix(`${name}/`);
    } finally {
      client.close();
    }
  }
});

/** `second` waits while `first` holds, and is granted once `first` releases. */
async function excludes(first: Peer, second: Peer): Promise<void> {
  first.acquire();
  await first.granted();
  expect(first.isGranted()).toBe(true);
  second.acquire();
  await sleep(NOT_GRANTED_MS);
  expect(second.isGranted()).toBe(false);
  await first.release();
  expect(first.isGranted()).toBe(false);
  await second.granted();
  expect(second.isGranted()).toBe(true);
}

/**
 * A waiter that gives up is told `released` and leaves the holder alone. It gives up once its entry is
 * queued (`entries` counts them): an etcdctl signalled while its lock request is still in flight may
 * leave its key to its lease.
 */
async function cancels(holder: Peer, waiter: Peer, entries: () => Promise<number>): Promise<void> {
  waiter.acquire();
  await eventually('the waiter queued', async () => (await entries()) === 2);
  await waiter.release();
  expect(waiter.isGranted()).toBe(false);
  expect(holder.isGranted()).toBe(true);
}

type ZkPeer = (path: string, recipe: 'mutex' | 'read' | 'write', id: string) => Promise<Peer>;

/** The mutex and read/write lock of a ZooKeeper peer library, against itself. */
function zkLockTests(library: string, start: ZkPeer): void {
  it(`${library}: two mutex peers exclude each other; a waiter that gives up leaves no node`, async () => {
    const dir = zkPath();
    const [a, b, c] = await Promise.all(['a', 'b', 'c'].map((id) => start(dir, 'mutex', id)));
    await excludes(a!, b!);
    await cancels(b!, c!, async () => (await zkEntries(dir)).length);
    expect(await c!.leader()).toBe('b');
    expect(await zkEntries(dir)).toHaveLength(1);
    await b!.release();
    expect(await zkEntries(dir)).toEqual([]);
  });

  it(`${library}: readers share a read/write lock, a writer waits for them`, async () => {
    const dir = zkPath();
    const [r1, r2, w] = await Promise.all(
      (['read', 'read', 'write'] as const).map((recipe, i) => start(dir, recipe, `${recipe}${i}`)),
    );
    r1!.acquire();
    r2!.acquire();
    await Promise.all([r1!.granted(), r2!.granted()]);
    w!.acquire();
    await sleep(NOT_GRANTED_MS);
    expect(w!.isGranted()).toBe(false);
    await r1!.release();
    await r2!.release();
    await w!.granted();
    await w!.release();
    expect(await zkEntries(dir)).toEqual([]);
  });
}

describe('Curator peers', () => {
  zkLockTests('Curator', (path, recipe, id) => curatorPeer({ connectString: zk(), path, recipe, id }));

  it('LeaderLatch and LeaderSelector: one leader at a time, leader() names it', async () => {
    for (const recipe of ['latch', 'selector'] as const) {
      const dir = zkPath();
      const [a, b] = await Promise.all(
        ['a', 'b'].map((id) => curatorPeer({ connectString: zk(), path: dir, recipe, id })),
      );
      expect(await a!.leader()).toBeNull();
      await excludes(a!, b!);
      expect(await a!.leader()).toBe('b');
      expect(await b!.leader()).toBe('b');
      await b!.release();
      expect(await a!.leader()).toBeNull();
      expect(await zkEntries(dir)).toEqual([]);
    }
  });
});

describe('kazoo peers', () => {
  zkLockTests('kazoo', (path, recipe, id) => kazooPeer({ connectString: zk(), path, recipe, id }));

  it('Election: one leader at a time, leader() names it', async () => {
    const dir = zkPath();
    const [a, b, observer] = await Promise.all(
      (['election', 'election', 'observe'] as const).map((recipe, i) =>
        kazooPeer({ connectString: zk(), path: dir, recipe, id: ['a', 'b', 'o'][i]! }),
      ),
    );
    expect(await observer!.leader()).toBeNull();
    await excludes(a!, b!);
    expect(await observer!.leader()).toBe('b');
    await b!.release();
    expect(await observer!.leader()).toBeNull();
    expect(await zkEntries(dir)).toEqual([]);
  });
});

describe('etcdctl peers', () => {
  it('two `etcdctl lock` peers exclude each other; SIGINT deletes the key, of a waiter too', async () => {
    const name = etcdName();
    const [a, b, c] = await Promise.all(
      ['a', 'b', 'c'].map((id) => etcdctlPeer({ endpoints: endpoints(), name, recipe: 'lock', id })),
    );
    await excludes(a!, b!);
    await cancels(b!, c!, async () => (await etcdKeys(name)).length);
    expect(b!.key).toMatch(new RegExp(`^${name}/[0-9a-f]+$`));
    expect(await a!.leader()).toBe(b!.key);
    expect(await etcdKeys(name)).toEqual([b!.key]);
    await b!.release();
    expect(await etcdKeys(name)).toEqual([]);
    expect(await a!.leader()).toBeNull();
  });

  it('`etcdctl elect`: one leader at a time, leader() names its proposal; stop() (SIGTERM) resigns', async () => {
    const name = etcdName();
    const [a, b, c] = await Promise.all(
      ['a', 'b', 'c'].map((id) => etcdctlPeer({ endpoints: endpoints(), name, recipe: 'elect', id })),
    );
    expect(await a!.leader()).toBeNull();
    await excludes(a!, b!);
    expect(await a!.leader()).toBe('b');
    await b!.release();
    expect(await a!.leader()).toBeNull();
    expect(await etcdKeys(name)).toEqual([]);
    c!.acquire();
    await c!.granted();
    expect(await a!.leader()).toBe('c');
    await stopAllPeers();
    expect(await etcdKeys(name)).toEqual([]);
  });
});

import { createRequire } from 'node:module';

import { zkCounters, zkProbeOf, type ZkView } from 'baton-locks/testing';
import zookeeper from 'node-zookeeper-client';
import { describe, expect, inject, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { BackendError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { create, getChildren, remove } from '../../../src/backends/zookeeper/client.js';
import { mkdirp } from '../../../src/backends/zookeeper/mkdirp.js';
import { useScope } from '../../harness/backends/scope.js';
import { useZkAdmin, zkFixture } from '../../harness/backends/zookeeper.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';

const require = createRequire(import.meta.url);
const ConnectionManager = require('node-zookeeper-client/lib/ConnectionManager.js') as { prototype: object };
/** Request types of the ZooKeeper protocol. */
/** An entry's create: CREATE2 (15), answered with the node's stat; the client's own create (1) where baton cannot send that. */
const CREATES = new Set([1, 15]);
const GET_CHILDREN2 = 12;
interface QueuedRequest {
  header?: { type?: number } | null;
  payload?: { path?: string } | null;
}

function driverOf(session: Session): ZkView {
  return zkProbeOf(session).view;
}

// A create whose reply was lost can be applied after the enqueue searched for it and created its entry
// again (a member that had not applied it yet answered the search): the session then owns a second
// child it does not know of. These tests make such a child with the session's own connection, as that
// create would have, and check that the session deletes it instead of queueing behind it.
describe('ZooKeeper: a session deletes its own orphaned queue children', () => {
  const scope = useScope(() => zkFixture('zkStandalone'));
  const info = inject('zkStandalone');
  const zkAdmin = useZkAdmin(() => info.connectString);
  const withinMs = (): number => info.sessionTimeoutMs * 2;

  it('its own acquire behind its own orphan is granted, and the orphan is gone', async () => {
    const session = await scope.open();
    const removedBefore = zkCounters.orphansRemoved;
    const orphan = await driverOf(session).createOrphan('behind-own');
    // Without the sweep this acquire would wait for the orphan, that is for the session's end.
    const lock = await new FairMutex(session, 'behind-own').acquire({ timeoutMs: withinMs() });
    expect(zkCounters.orphansRemoved - removedBefore).toBe(1);
    const { children } = await getChildren(zkAdmin(), `/${scope.namespace}/behind-own`);
    expect(children.map((child) => `/${scope.namespace}/behind-own/${child}`)).toEqual([entryOf(lock).key]);
    expect(orphan).not.toBe(entryOf(lock).key);
    await lock.release();
  });

  it('a copy of its entry, left by an attempt whose reply was lost and applied only after the search for it, is swept while the acquire runs', async () => {
    const session = await scope.open();
    const mutex = new FairMutex(session, 'copy');
    await (await mutex.acquire()).release(); // the directory exists
    // The first create's reply is lost (the client is told CONNECTION_LOSS, the request is held back);
    // the held create reaches the server just after the search for it was answered, as from a member
    // that had not applied it yet. It then takes a lower sequence than the attempt that follows.
    const manager = ConnectionManager.prototype as {
      queue(request: QueuedRequest, callback: (error: unknown, response?: unknown) => void): void;
    };
    const queue = manager.queue;
    let stage: 'first create' | 'its listing' | 'the search' | 'done' = 'first create';
    let heldBack: QueuedRequest | undefined;
    manager.queue = function (this: unknown, request, callback) {
      const { type } = request.header ?? {};
      const path = request.payload?.path ?? '';
      if (stage === 'first create' && CREATES.has(type as number) && path.startsWith(`/${scope.namespace}/copy/`)) {
        stage = 'its listing';
        heldBack = request;
        setImmediate(() =>
          callback(
            (zookeeper.Exception as unknown as { create(code: number): Error }).create(
              zookeeper.Exception.CONNECTION_LOSS,
            ),
          ),
        );
        return;
      }
      if (type === GET_CHILDREN2 && path === `/${scope.namespace}/copy`) {
        if (stage === 'its listing') stage = 'the search';
        else if (stage === 'the search') {
          stage = 'done';
          const answered = callback;
          callback = (error, response) => {
            queue.call(this, heldBack!, () => undefined);
            answered(error, response);
          };
        }
      }
      queue.call(this, request, callback);
    };
    try {
      const removedBefore = zkCounters.orphansRemoved;
      const lock = await mutex.acquire({ timeoutMs: withinMs() });
      expect(stage).toBe('done');
      expect(zkCounters.orphansRemoved - removedBefore).toBe(1);
      const { children } = await getChildren(zkAdmin(), `/${scope.namespace}/copy`);
      expect(children.map((child) => `/${scope.namespace}/copy/${child}`)).toEqual([entryOf(lock).key]);
      await lock.release();
    } finally {
      manager.queue = queue;
    }
  });

  it('listings are searched for orphans only once an enqueue has failed, and from then on', async () => {
    const session = await scope.open();
    const mutex = new FairMutex(session, 'searched');
    for (let i = 0; i < 3; i += 1) await (await mutex.acquire()).release();
    // No create of this session has failed: it cannot own a child it does not know of.
    expect(driverOf(session).searchesForOrphans).toBe(false);
    // A create that fails after reaching the server: the queue's directory is an ephemeral node, which
    // ZooKeeper refuses children.
    await mkdirp(zkAdmin(), `/${scope.namespace}`);
    await create(zkAdmin(), `/${scope.namespace}/ephemeral`, zookeeper.CreateMode.EPHEMERAL);
    await expect(new FairMutex(session, 'ephemeral').acquire({ timeoutMs: withinMs() })).rejects.toBeInstanceOf(
      BackendError,
    );
    expect(driverOf(session).searchesForOrphans).toBe(true);
    await remove(zkAdmin(), `/${scope.namespace}/ephemeral`);
    // Searched from then on: a child of the session's own that it does not know of is deleted.
    const removedBefore = zkCounters.orphansRemoved;
    await driverOf(session).createOrphan('searched');
    await (await mutex.acquire({ timeoutMs: withinMs() })).release();
    expect(zkCounters.orphansRemoved - removedBefore).toBe(1);
  });

  it("another session's waiter queued behind the orphan is granted once the owner lists the queue; the owner's own entries stay", async () => {
    const [owner, other] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(owner, 'held').acquire(); // an entry of the owner's that must survive the sweep
    await driverOf(owner).createOrphan('shared');
    const waiting = new FairMutex(other, 'shared').acquire({ timeoutMs: withinMs() });
    await eventually(
      'the other session queued',
      async () => (await backendOf(other).list('shared')).length === 2,
      withinMs(),
    );
    // Any listing by the owner finds the orphan: here a tryAcquire on the queue, which is busy meanwhile or not.
    const attempt = await new FairMutex(owner, 'shared').tryAcquire();
    const granted = await waiting;
    expect(await backendOf(owner).confirm(entryOf(held))).toBe(true);
    expect(await backendOf(owner).list('held')).toEqual([entryOf(held)]);
    await granted.release();
    await attempt?.release();
    await held.release();
    await eventually('queue empty', async () => (await backendOf(other).list('shared')).length === 0, withinMs());
  });
});

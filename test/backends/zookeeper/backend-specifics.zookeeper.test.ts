import { createRequire } from 'node:module';
import { Socket } from 'node:net';

import { zkProbeOf } from 'baton-locks/testing';
import zookeeper from 'node-zookeeper-client';
import { describe, expect, inject, it } from 'vitest';

import { LockTimeoutError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { create, getChildren, remove } from '../../../src/backends/zookeeper/client.js';
import { mkdirp } from '../../../src/backends/zookeeper/mkdirp.js';
import { useScope } from '../../harness/backends/scope.js';
import { useZkAdmin, zkFixture } from '../../harness/backends/zookeeper.js';
import { fourLetterWord } from '../../harness/servers/four-letter.js';

const ConnectionManager = createRequire(import.meta.url)('node-zookeeper-client/lib/ConnectionManager.js') as {
  prototype: object;
};

const ENTRY_NAME = /^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-\d{10}$/;

describe('FairMutex on ZooKeeper: backend specifics', () => {
  const scope = useScope(() => zkFixture('zkStandalone'));
  const info = inject('zkStandalone');
  const zkAdmin = useZkAdmin(() => info.connectString);

  it('names entries like Curator (_c_<uuid>-lock-<sequence>) under /<namespace>/<name>', async () => {
    const session = await scope.open();
    const lock = await new FairMutex(session, 'payments/settlement').acquire();
    const { children } = await getChildren(zkAdmin(), `/${scope.namespace}/payments/settlement`);
    expect(children).toHaveLength(1);
    expect(children[0]).toMatch(ENTRY_NAME);
    expect(lock.fencingToken > 0n).toBe(true);
    await lock.release();
  });

  it('sends the create and the listing of an acquire in one socket write', async () => {
    const session = await scope.open();
    const mutex = new FairMutex(session, 'one-write');
    await (await mutex.acquire()).release(); // the directory exists from here on
    const batches: Buffer[][] = [];
    const writev = Socket.prototype._writev!;
    Socket.prototype._writev = function (this: Socket, chunks, callback) {
      batches.push(chunks.map((c) => Buffer.from(c.chunk as Buffer)));
      writev.call(this, chunks, callback);
    };
    try {
      await (await mutex.acquire()).release();
    } finally {
      Socket.prototype._writev = writev;
    }
    const dir = Buffer.from(`/${scope.namespace}/one-write`);
    expect(batches.filter((batch) => batch.length === 2 && batch.every((chunk) => chunk.includes(dir)))).toHaveLength(
      1,
    );
  });

  it('keeps working past 2^31 requests in one session: request ids wrap around instead of overflowing', async () => {
    const session = await scope.open();
    const mutex = new FairMutex(session, 'many-requests');
    // The session's connection manager, caught as it queues a request.
    const prototype = ConnectionManager.prototype as { queue(this: { xid: number }, ...args: unknown[]): void };
    const queue = prototype.queue;
    let manager: { xid: number } | undefined;
    prototype.queue = function (...args) {
      manager ??= this;
      queue.apply(this, args);
    };
    try {
      await (await mutex.acquire()).release();
    } finally {
      prototype.queue = queue;
    }
    // A plain data property: an accessor would turn the manager into a slow (dictionary-mode) object.
    expect(Object.getOwnPropertyDescriptor(manager, 'xid')).toEqual(
      expect.objectContaining({ writable: true, value: expect.any(Number) }),
    );
    manager!.xid = 2 ** 31 - 4; // as after two weeks of a busy session
    for (let i = 0; i < 4; i += 1) await (await mutex.acquire({ timeoutMs: 5_000 })).release();
    expect(manager!.xid).toBeGreaterThan(0);
    expect(manager!.xid).toBeLessThan(100);
    expect(session.state).toBe('connected');
  });

  it('waits that time out leave nothing behind in the session (no path kept for a reconnect to watch again)', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const driver = zkProbeOf(b).view;
    const before = driver.waitedPaths;
    const held = await Promise.all(Array.from({ length: 20 }, (_, i) => new FairMutex(a, `given-up/${i}`).acquire()));
    for (let i = 0; i < 20; i += 1)
      await expect(new FairMutex(b, `given-up/${i}`).acquire({ timeoutMs: 20 })).rejects.toBeInstanceOf(
        LockTimeoutError,
      );
    expect(driver.waitedPaths).toBe(before);
    for (const lock of held) await lock.release();
  });

  it('keeps fencing tokens increasing when the lock directory is deleted and created again', async () => {
    const session = await scope.open();
    const mutex = new FairMutex(session, 'recreated');
    const tokens: bigint[] = [];
    for (let round = 0; round < 3; round += 1) {
      const lock = await mutex.acquire();
      tokens.push(lock.fencingToken);
      await lock.release();
      await remove(zkAdmin(), `/${scope.namespace}/recreated`); // sequence numbers restart at 0 after this
    }
    expect(tokens[1]! > tokens[0]!).toBe(true);
    expect(tokens[2]! > tokens[1]!).toBe(true);
  });

  it('ignores foreign children in a lock directory', async () => {
    const session = await scope.open();
    await mkdirp(zkAdmin(), `/${scope.namespace}/foreign`);
    await create(zkAdmin(), `/${scope.namespace}/foreign/not-a-baton-entry`, zookeeper.CreateMode.PERSISTENT);
    await create(zkAdmin(), `/${scope.namespace}/foreign/member-0000000000`, zookeeper.CreateMode.PERSISTENT);
    const lock = await new FairMutex(session, 'foreign').acquire({ timeoutMs: 5_000 });
    await lock.release();
    await remove(zkAdmin(), `/${scope.namespace}/foreign/not-a-baton-entry`);
    await remove(zkAdmin(), `/${scope.namespace}/foreign/member-0000000000`);
  });
});

describe('ZooKeeper: the session timeout the server granted', () => {
  const info = inject('zkStandalone');
  const scope = useScope(() => zkFixture('zkStandalone'));

  it('session.timeoutMs is the timeout ZooKeeper negotiated, also when it raised the one asked for', async () => {
    for (const asked of [info.sessionTimeoutMs, 1]) {
      const session = await scope.open({ sessionTimeoutMs: asked });
      // The server's own view of the connection: `cons` lists each one with its session id and timeout.
      const sid = `sid=0x${BigInt(`0x${session.id}`).toString(16)}`;
      const cons = await fourLetterWord(info.ports[0]!, 'cons');
      const line = cons.split('\n').find((entry) => entry.includes(sid));
      expect(line, `cons shows ${sid}`).toBeDefined();
      expect(session.timeoutMs).toBe(Number(/\bto=(\d+)/.exec(line!)![1]));
      if (asked === 1) expect(session.timeoutMs).toBeGreaterThan(1);
      await session.close();
    }
  });
});

import { connect } from 'baton-locks/testing';
import { describe, expect, inject, it } from 'vitest';

import { InvalidArgumentError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { EtcdDriver } from '../../../src/backends/etcd/driver.js';
import { etcdFixture, useEtcdAdmin } from '../../harness/backends/etcd.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { eventually } from '../../harness/wait.js';

describe('FairMutex on etcd: backend specifics', () => {
  const scope = useScope(() => etcdFixture('etcdStandalone'));
  const info = inject('etcdStandalone');
  const admin = useEtcdAdmin();

  const keys = (name: string): Promise<string[]> => admin().getAll().prefix(`${scope.namespace}/${name}/#/`).keys();

  it("session.timeoutMs is the TTL etcd granted the session's lease", async () => {
    const session = await scope.open({ ttlSeconds: 7 });
    // The server's own view of the lease: its id is the session id in hex.
    const granted = await admin().leaseClient.leaseTimeToLive({
      ID: BigInt(`0x${session.id}`).toString(),
      keys: false,
    });
    expect(Number(granted.grantedTTL)).toBe(7);
    expect(session.timeoutMs).toBe(7_000);
  });

  it('reuses one key per session and slot across acquisitions, and a second hold takes another slot', async () => {
    const session = await scope.open();
    const mutex = new FairMutex(session, 'reuse');
    const seen = new Set<string>();
    for (let i = 0; i < 20; i += 1) {
      const lock = await mutex.acquire();
      for (const key of await keys('reuse')) seen.add(key);
      await lock.release();
    }
    expect([...seen]).toEqual([`${scope.namespace}/reuse/#/${session.id}-0-lock`]);
    const first = await mutex.acquire();
    const second = mutex.acquire();
    await eventually('second queued', async () => (await keys('reuse')).length === 2);
    expect((await keys('reuse')).sort()).toEqual([
      `${scope.namespace}/reuse/#/${session.id}-0-lock`,
      `${scope.namespace}/reuse/#/${session.id}-1-lock`,
    ]);
    await first.release();
    await (await second).release();
  });

  it('a stale withdraw cannot delete a newer entry in the same slot', async () => {
    const session = await scope.open();
    const mutex = new FairMutex(session, 'stale');
    const old = await mutex.acquire();
    const oldEntry = entryOf(old);
    await old.release();
    const current = await mutex.acquire();
    expect(entryOf(current).key).toBe(oldEntry.key);
    await backendOf(session).withdraw(oldEntry); // a late retry of the first release
    expect(await keys('stale')).toEqual([entryOf(current).key]);
    expect(await backendOf(session).confirm(entryOf(current))).toBe(true);
    await current.release();
  });

  it('retires the slot of a release whose reply was lost: the next acquisition writes another key', async () => {
    const proxy = await TcpProxy.start({ port: Number(new URL(info.endpoints[0]!).port) });
    const session = await connect(`etcd://${proxy.address}/${scope.namespace}`, { ttlSeconds: info.ttlSeconds });
    try {
      const mutex = new FairMutex(session, 'retire');
      const held = await mutex.acquire();
      expect(entryOf(held).key).toBe(`${scope.namespace}/retire/#/${session.id}-0-lock`);
      // The plain delete reaches the server, its reply does not: its fate is unknown to the client.
      const cut = proxy.dropAfterNextRequest((chunk) => chunk.includes(`${session.id}-0-lock`));
      const releasing = held.release();
      await cut;
      await releasing;
      expect(await keys('retire')).toEqual([]);
      // A copy of that delete could still be applied late, so slot 0 is never written again.
      for (let i = 0; i < 3; i += 1) {
        const next = await mutex.acquire();
        expect(entryOf(next).key).toBe(`${scope.namespace}/retire/#/${session.id}-1-lock`);
        await next.release();
      }
    } finally {
      await session.close();
      await proxy.close();
    }
  });

  /**
   * What an enqueue attempt applied after its entry was released leaves behind: a key with our lease
   * that no handle or waiter of ours stands for. Written here by another client, with our lease.
   */
  const plantOrphan = async (session: { id: string }, name: string, slot: number): Promise<string> => {
    const key = `${scope.namespace}/${name}/#/${session.id}-${slot}-lock`;
    await admin()
      .put(key)
      .value('')
      .lease(BigInt(`0x${session.id}`).toString())
      .exec();
    return key;
  };

  it('an entry of its own lease that nothing of its own stands for is removed when a listing shows it', async () => {
    const session = await scope.open();
    await plantOrphan(session, 'orphan', 99);
    // Without the removal the session would queue behind its own orphan for as long as it lives.
    const lock = await new FairMutex(session, 'orphan').acquire({ timeoutMs: info.ttlSeconds * 3_000 });
    expect(await keys('orphan')).toEqual([entryOf(lock).key]);
    await lock.release();
  });

  it('after an enqueue attempt of unknown fate, the queue is looked at until a late copy of it would have shown up', async () => {
    const proxy = await TcpProxy.start({ port: Number(new URL(info.endpoints[0]!).port) });
    const session = await connect(`etcd://${proxy.address}/${scope.namespace}`, { ttlSeconds: info.ttlSeconds });
    try {
      // The Txn reaches the server, its reply does not: the retry finds the key and adopts it.
      const cut = proxy.dropAfterNextRequest((chunk) => chunk.includes(`${session.id}-0-lock`));
      const held = await new FairMutex(session, 'late').acquire();
      await cut;
      await held.release();
      // The first attempt applied late, after the release: nobody of this session lists the queue now.
      const orphan = await plantOrphan(session, 'late', 0);
      const other = await scope.open();
      const lock = await new FairMutex(other, 'late').acquire({ timeoutMs: info.ttlSeconds * 3_000 });
      expect(await keys('late')).toEqual([entryOf(lock).key]);
      expect(entryOf(lock).key).not.toBe(orphan);
      await lock.release();
      // Slot 0 is retired: an enqueue there could adopt a late copy while its removal is on the way.
      const again = await new FairMutex(session, 'late').acquire();
      expect(entryOf(again).key).toBe(`${scope.namespace}/late/#/${session.id}-1-lock`);
      await again.release();
    } finally {
      await session.close();
      await proxy.close();
    }
  });

  it("a waiter for a key's earlier incarnation is woken even when a watch on its newer incarnation is already running", async () => {
    const [owner, waiter] = [await scope.open(), await scope.open()];
    const first = await backendOf(owner).enqueue('incarnations', 'lock');
    const x = await backendOf(waiter).enqueue('incarnations', 'lock');
    const old = x.queue.find((e) => e.key === first.entry.key)!; // the blocker as waiter x saw it
    await backendOf(owner).withdraw(first.entry);
    const second = await backendOf(owner).enqueue('incarnations', 'lock'); // the same key again, at the tail
    expect(second.entry.key).toBe(first.entry.key);
    const y = await backendOf(waiter).enqueue('incarnations', 'lock');
    const stopY = new AbortController();
    const yWaits = backendOf(waiter)
      .waitGone(
        y.queue.find((e) => e.key === second.entry.key)!,
        stopY.signal,
      )
      .catch(() => undefined);
    await eventually('the newer incarnation watched', async () =>
      (await scope.fixture.watched(scope.namespace)).includes(second.entry.key),
    );
    // x's wait for the incarnation that is already gone must end at once, not join y's watch.
    await backendOf(waiter).waitGone(old, AbortSignal.timeout(info.ttlSeconds * 1_000));
    stopY.abort();
    await yWaits;
    for (const entry of [x.entry, y.entry]) await backendOf(waiter).withdraw(entry);
    await backendOf(owner).withdraw(second.entry);
  });

  it('refuses a deadlineMarginMs as long as the lease TTL the server granted', async () => {
    const options = { ttlSeconds: info.ttlSeconds, deadlineMarginMs: info.ttlSeconds * 1_000 };
    await expect(connect(scope.fixture.url(scope.namespace), options)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('uses one lease for every lock of a session', async () => {
    const session = await scope.open();
    const locks = await Promise.all(['a', 'b', 'c'].map((name) => new FairMutex(session, name).acquire()));
    const leases = new Set<string>();
    for (const name of ['a', 'b', 'c']) {
      const kvs = await admin().getAll().prefix(`${scope.namespace}/${name}/#/`).exec();
      for (const kv of kvs.kvs) leases.add(BigInt(kv.lease).toString(16).padStart(16, '0'));
    }
    expect([...leases]).toEqual([session.id]);
    await Promise.all(locks.map((lock) => lock.release()));
  });

  it('is told at once when another client revokes its lease', async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'revoked').acquire();
    const next = new FairMutex(b, 'revoked').acquire();
    await eventually('queued', async () => (await keys('revoked')).length === 2);
    await admin().leaseClient.leaseRevoke({ ID: BigInt(`0x${a.id}`).toString() });
    await eventually('holder told', () => held.signal.aborted, info.ttlSeconds * 1_000);
    expect(a.state).toBe('lost');
    expect(backendOf(a)).toBeInstanceOf(EtcdDriver);
    await (await next).release();
  });
});

describe('etcd: one sessionTimeoutMs for every backend', () => {
  const url = (): string => `etcd://${inject('etcdStandalone').endpoints[0]!.replace('http://', '')}/ttl-test`;

  it('derives the lease TTL from sessionTimeoutMs, rounded up to whole seconds; ttlSeconds, when given, wins', async () => {
    for (const [options, granted] of [
      [{ sessionTimeoutMs: 4_000 }, 4_000],
      [{ sessionTimeoutMs: 3_200 }, 4_000],
      [{ sessionTimeoutMs: 4_000, ttlSeconds: 3 }, 3_000],
      [{}, 10_000],
    ] as const) {
      const session = await connect(url(), options);
      try {
        expect(session.timeoutMs, JSON.stringify(options)).toBe(granted);
      } finally {
        await session.close();
      }
    }
  });
});

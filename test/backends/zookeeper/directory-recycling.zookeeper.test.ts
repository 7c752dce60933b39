import { type AfterLook, mkdirpHooks, zkCounters, zkLimits } from 'baton-locks/testing';
import zookeeper from 'node-zookeeper-client';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';

import { LeaderElection } from '../../../recipes/election.js';
import { BackendError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { ReadWriteLock } from '../../../recipes/rw-lock.js';
import { create, exists, getChildren, isCode, remove, ZkCode } from '../../../src/backends/zookeeper/client.js';
import { mkdirp, MKDIRP_LOOKS } from '../../../src/backends/zookeeper/mkdirp.js';
import { parseEntryName } from '../../../src/backends/zookeeper/names.js';
import { useScope } from '../../harness/backends/scope.js';
import { useZkAdmin, zkFixture } from '../../harness/backends/zookeeper.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { eventually, later } from '../../harness/wait.js';

/**
 * ZooKeeper can count a directory's creates only to 2^31 - 1; past that its sequential names turn
 * negative and the lock is unusable. baton deletes a directory whose count passed a limit once a
 * delete of its own may have left it empty, and creates it again on the next enqueue. Production's limit
 * is 2^30; here it is a handful, so that directories are deleted under the recipes' feet all the time.
 */
describe.each(['zkStandalone', 'zkEnsemble'] as const)(
  'ZooKeeper: a directory deleted and created again past its sequence limit, on %s',
  (which) => {
    const scope = useScope(() => zkFixture(which));
    const info = inject(which);
    const zkAdmin = useZkAdmin(() => info.connectString);
    const withinMs = (): number => info.sessionTimeoutMs * 4;
    beforeEach(() => {
      zkLimits.recycleFrom = 3;
    });
    afterEach(() => {
      zkLimits.recycleFrom = 2 ** 30;
      mkdirpHooks.afterLook = undefined;
    });

    // A directory renewed (deleted) between mkdirp's look for the deepest existing ancestor and its
    // creates below it: the race of a nested lock's first acquire with its parent's renewal. The hook
    // runs right after each look, so the deletion lands in that window every time.
    it('mkdirp looks again from the top when the ancestor it found is deleted before its creates', async () => {
      const client = zkAdmin();
      const outer = `/${scope.namespace}/race-outer`;
      await mkdirp(client, outer);
      const looks: string[] = [];
      const afterLook: AfterLook = async (deepest) => {
        looks.push(deepest);
        if (looks.length === 1) await remove(client, deepest);
      };
      await mkdirp(client, `${outer}/inner/leaf`, undefined, afterLook);
      expect(looks).toEqual([outer, `/${scope.namespace}`]);
      expect(await exists(client, `${outer}/inner/leaf`)).not.toBeNull();
    });

    it(`mkdirp gives up with NO_NODE after ${MKDIRP_LOOKS} looks when the ancestor keeps vanishing, having created nothing`, async () => {
      const client = zkAdmin();
      const base = `/${scope.namespace}/vanishing`;
      const levels = Array.from(
        { length: MKDIRP_LOOKS },
        (_, i) =>
          `${base}/${'abcdefgh'
            .slice(0, i + 1)
            .split('')
            .join('/')}`,
      );
      await mkdirp(client, levels.at(-1)!); // base/a/b/c/d/e
      const looks: string[] = [];
      const afterLook: AfterLook = async (deepest) => {
        looks.push(deepest);
        await remove(client, deepest); // each look finds one level less, and loses it before its create
      };
      const error = await mkdirp(client, `${levels.at(-1)!}/f/g`, undefined, afterLook).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(isCode(error, ZkCode.NO_NODE), String(error)).toBe(true);
      expect(looks).toEqual([...levels].reverse());
      expect((await getChildren(client, base)).children).toEqual([]);
    });

    it("a nested lock's first acquire succeeds while its parent directory is deleted under it", async () => {
      const session = await scope.open();
      const client = zkAdmin();
      const parent = `/${scope.namespace}/renewed`;
      await mkdirp(client, parent); // empty, as a renewal would find it
      const looks: string[] = [];
      mkdirpHooks.afterLook = async (deepest) => {
        looks.push(deepest);
        if (deepest === parent && looks.length === 1) await remove(client, parent);
      };
      const lock = await new FairMutex(session, 'renewed/inner').acquire({ timeoutMs: withinMs() });
      expect(looks.slice(0, 2)).toEqual([parent, `/${scope.namespace}`]);
      expect(entryOf(lock).key.startsWith(`${parent}/inner/`)).toBe(true);
      await lock.release();
      expect((await getChildren(client, `${parent}/inner`)).children).toEqual([]);
    });

    // Past 2^31 - 1 creates ZooKeeper names a child `lock--2147483648`. A Curator peer sorts that name
    // first (as text) and believes it holds; no order of baton's agrees with that, so baton refuses.
    it("a queue holding a peer's entry whose sequence wrapped negative: acquires and waiters are refused with the directory named, leaving nothing behind", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const client = zkAdmin();
      const dir = `/${scope.namespace}/wrapped`;
      const held = await new FairMutex(a, 'wrapped').acquire();
      const waiting = later(new FairMutex(b, 'wrapped').acquire({ timeoutMs: withinMs() }));
      await eventually('b queued', async () => (await backendOf(a).list('wrapped')).length === 2, withinMs());
      const peer = `${dir}/lock--2147483648`;
      await create(client, peer, zookeeper.CreateMode.EPHEMERAL);
      const refused = async (promise: Promise<unknown>): Promise<void> => {
        const error = await promise.then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toBeInstanceOf(BackendError);
        expect((error as Error).message).toContain(dir);
        expect((error as Error).message).toContain('delete the directory');
      };
      await refused(new FairMutex(a, 'wrapped').acquire({ timeoutMs: withinMs() }));
      await refused(new FairMutex(b, 'wrapped').tryAcquire());
      // The waiter lists again once the holder goes: refused too, never granted beside the peer.
      await held.release();
      await refused(waiting);
      await eventually(
        "only the peer's child left",
        async () => (await getChildren(client, dir)).children.join() === 'lock--2147483648',
        withinMs(),
      );
      await remove(client, peer);
      await (await new FairMutex(b, 'wrapped').acquire({ timeoutMs: withinMs() })).release();
    });

    it('one session alone: the directory goes once it is empty past the limit, sequences start again, tokens keep growing', async () => {
      const session = await scope.open();
      const mutex = new FairMutex(session, 'alone');
      const dir = `/${scope.namespace}/alone`;
      const recycledBefore = zkCounters.recycled;
      const tokens: bigint[] = [];
      const sequences: bigint[] = [];
      for (let i = 0; i < 10; i += 1) {
        const lock = await mutex.acquire({ timeoutMs: withinMs() });
        tokens.push(lock.fencingToken);
        sequences.push(parseEntryName(entryOf(lock).key.slice(dir.length + 1))!.sequence);
        await lock.release();
        if (sequences.at(-1)! >= 3n)
          await eventually('the directory deleted', async () => (await exists(zkAdmin(), dir)) === null, withinMs());
      }
      // 0 1 2 3, deleted; 0 1 2 3, deleted; 0 1.
      expect(sequences).toEqual([0n, 1n, 2n, 3n, 0n, 1n, 2n, 3n, 0n, 1n]);
      expect(zkCounters.recycled - recycledBefore).toBe(2);
      for (let i = 1; i < tokens.length; i += 1)
        expect(tokens[i]! > tokens[i - 1]!, `token ${i} after token ${i - 1}`).toBe(true);
    });

    it('a directory with an entry in it is never deleted: the holder keeps its lock, the waiter gets it next', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const dir = `/${scope.namespace}/busy`;
      for (let i = 0; i < 3; i += 1) await (await new FairMutex(a, 'busy').acquire()).release();
      const held = await new FairMutex(b, 'busy').acquire(); // sequence 3, past the limit
      const waiting = later(new FairMutex(a, 'busy').acquire({ timeoutMs: withinMs() }));
      await eventually('a queued', async () => (await backendOf(b).list('busy')).length === 2, withinMs());
      // A release of a's, past the limit, while b holds: the directory must stay.
      const tried = await new FairMutex(a, 'busy').tryAcquire();
      expect(tried).toBeNull();
      // a's requests are answered in order: once this listing is, so is the attempt to delete the directory.
      expect(await backendOf(a).list('busy')).toHaveLength(2);
      expect(await exists(zkAdmin(), dir)).not.toBeNull();
      expect(await backendOf(b).confirm(entryOf(held))).toBe(true);
      const firstToken = held.fencingToken;
      await held.release();
      const next = await waiting;
      expect(next.fencingToken > firstToken).toBe(true);
      await next.release();
      await eventually(
        'the directory deleted once empty',
        async () => (await exists(zkAdmin(), dir)) === null,
        withinMs(),
      );
    });

    it('four sessions contending in rounds, each round begun while the last release may be deleting the directory: one holder at a time, tokens growing in grant order', async () => {
      const sessions = await Promise.all([0, 1, 2, 3].map(() => scope.open()));
      const mutexes = sessions.map((session) => new FairMutex(session, 'rounds'));
      const recycledBefore = zkCounters.recycled;
      let holders = 0;
      let most = 0;
      const tokens: bigint[] = [];
      for (let round = 0; round < 12; round += 1) {
        // The last release of a round empties the directory, and the next round's creates race its deletion.
        await Promise.all(
          mutexes.map(async (mutex) => {
            const lock = await mutex.acquire({ timeoutMs: withinMs() });
            holders += 1;
            most = Math.max(most, holders);
            tokens.push(lock.fencingToken);
            await new Promise((resolve) => setImmediate(resolve));
            holders -= 1;
            await lock.release();
          }),
        );
      }
      expect(most).toBe(1);
      expect(tokens).toHaveLength(48);
      for (let i = 1; i < tokens.length; i += 1)
        expect(tokens[i]! > tokens[i - 1]!, `grant ${i} after grant ${i - 1}`).toBe(true);
      expect(zkCounters.recycled - recycledBefore).toBeGreaterThan(0);
    });

    it('read/write locks and an observer of an election carry on across deletions of their directories', async () => {
      const [a, b, watcher] = [await scope.open(), await scope.open(), await scope.open()];
      const recycledBefore = zkCounters.recycled;
      for (let i = 0; i < 6; i += 1) {
        const read = await new ReadWriteLock(a, 'config').readLock.acquire({ timeoutMs: withinMs() });
        const otherRead = await new ReadWriteLock(b, 'config').readLock.acquire({ timeoutMs: withinMs() });
        const write = later(new ReadWriteLock(b, 'config').writeLock.acquire({ timeoutMs: withinMs() }));
        await eventually('the writer queued', async () => (await backendOf(a).list('config')).length === 3, withinMs());
        await read.release();
        await otherRead.release();
        await (await write).release();
      }
      const stop = new AbortController();
      const observer = new LeaderElection(watcher, 'leaders', { id: 'w' }).observe({ signal: stop.signal });
      expect((await observer.next()).value).toBeNull();
      const seen: (string | null)[] = [];
      for (let i = 0; i < 6; i += 1) {
        const leadership = await new LeaderElection(i % 2 === 0 ? a : b, 'leaders', { id: `c${i}` }).campaign({
          timeoutMs: withinMs(),
        });
        seen.push((await observer.next()).value?.id ?? null);
        await leadership.resign();
        seen.push((await observer.next()).value?.id ?? null);
      }
      expect(seen).toEqual(['c0', null, 'c1', null, 'c2', null, 'c3', null, 'c4', null, 'c5', null]);
      stop.abort();
      await observer.return();
      // At least once, whichever session's next create wins the race with a release's deletion.
      expect(zkCounters.recycled - recycledBefore).toBeGreaterThan(0);
    });
  },
);

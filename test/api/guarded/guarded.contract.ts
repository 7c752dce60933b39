import { describe, expect, it } from 'vitest';

import { LeaderElection } from '../../../recipes/election.js';
import { InvalidArgumentError, InvalidNameError, LockLostError } from '../../../recipes/errors.js';
import { MAX_VALUE_BYTES, UnsupportedError } from '../../../recipes/guarded.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { ReadWriteLock } from '../../../recipes/rw-lock.js';
import type { Fixture } from '../../harness/backends/fixture.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';

/** Guarded values (lock.guarded), written once and run against every backend. */
export function guardedContract(getFixture: () => Fixture): void {
  describe(`guarded values on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it('puts, reads back, overwrites and deletes; the next holder reads what the last one wrote', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const first = await new FairMutex(a, 'ledger').acquire();
      expect(await first.guarded.get('last-period')).toBeNull();
      await first.guarded.put('last-period', '2026-10');
      await first.guarded.put('last-period', '2026-11');
      await first.guarded.put('empty', '');
      expect(await first.guarded.get('last-period')).toBe('2026-11');
      expect(await first.guarded.get('empty')).toBe('');
      await first.release();
      const next = await new FairMutex(b, 'ledger').acquire();
      expect(await next.guarded.get('last-period')).toBe('2026-11');
      await next.guarded.delete('last-period');
      await next.guarded.delete('empty');
      await next.guarded.delete('never-written'); // nothing there: no error
      expect(await next.guarded.get('last-period')).toBeNull();
      await next.release();
    });

    it('keeps values per lock name, apart from the queue: listings and nested locks never see them', async () => {
      const session = await scope.open();
      const outer = await new FairMutex(session, 'a').acquire();
      const inner = await new FairMutex(session, 'a/b').acquire();
      await outer.guarded.put('b', 'outer');
      await inner.guarded.put('b', 'inner');
      expect(await outer.guarded.get('b')).toBe('outer');
      expect(await inner.guarded.get('b')).toBe('inner');
      const listed = await backendOf(session).list('a');
      expect(listed.map((entry) => entry.key)).toEqual([entryOf(outer).key]);
      // And a third contender on "a" queues behind the holder, not behind a value.
      const other = await scope.open();
      expect(await new FairMutex(other, 'a').tryAcquire()).toBeNull();
      await outer.guarded.delete('b');
      await inner.guarded.delete('b');
      await Promise.all([outer.release(), inner.release()]);
    });

    it("sees a value left behind in the fixture's listing, so the clean-state check catches a leak", async () => {
      const session = await scope.open();
      const lock = await new FairMutex(session, 'leaky').acquire();
      await lock.guarded.put('left', 'x');
      await lock.release();
      const listed = await scope.fixture.entries(scope.namespace);
      expect(listed).toHaveLength(1);
      expect(listed[0]).toContain('left');
      const again = await new FairMutex(session, 'leaky').acquire();
      await again.guarded.delete('left');
      await again.release();
      expect(await scope.fixture.entries(scope.namespace)).toEqual([]);
    });

    it('refuses the write on the store once the entry is gone (deleted by an admin): nothing written', async () => {
      const session = await scope.open();
      const lock = await new FairMutex(session, 'refused').acquire();
      await lock.guarded.put('v', 'before');
      const entry = entryOf(lock);
      await scope.fixture.removeEntry(entry.key);
      // Straight to the store, past the handle's own check: the store itself refuses.
      const backend = backendOf(session);
      expect(await backend.guardedWrite(entry, { type: 'put', name: 'v', value: 'after' })).toBe(false);
      expect(await backend.guardedWrite(entry, { type: 'delete', name: 'v' })).toBe(false);
      expect(await backend.guardedWrite(entry, { type: 'put', name: 'new', value: 'x' })).toBe(false);
      expect(await backend.guardedRead('refused', 'v')).toBe('before');
      expect(await backend.guardedRead('refused', 'new')).toBeNull();
      await expect(lock.guarded.put('v', 'after')).rejects.toBeInstanceOf(LockLostError);
      await expect(lock.guarded.delete('v')).rejects.toBeInstanceOf(LockLostError);
      // Cleaning up takes a holder.
      const next = await new FairMutex(session, 'refused').acquire();
      expect(await next.guarded.get('v')).toBe('before');
      await next.guarded.delete('v');
      await Promise.all([next.release(), lock.release()]);
    });

    it("refuses a late write of a holder whose lock went to the next holder, keeping the next holder's value", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const old = await new FairMutex(a, 'handoff').acquire();
      const waiting = new FairMutex(b, 'handoff').acquire();
      await eventually('b queued', async () => (await backendOf(b).list('handoff')).length === 2);
      // The old holder's entry goes behind its back (as its session's expiry would): the next is granted.
      await scope.fixture.removeEntry(entryOf(old).key);
      const next = await waiting;
      await next.guarded.put('period', 'next');
      // The old holder's write arrives late, as after a pause: refused by the store.
      expect(await backendOf(a).guardedWrite(entryOf(old), { type: 'put', name: 'period', value: 'old' })).toBe(false);
      expect(await next.guarded.get('period')).toBe('next');
      await next.guarded.delete('period');
      await Promise.all([next.release(), old.release()]);
    });

    it('refuses the write once the session expired on the server', async () => {
      const session = await scope.open();
      const lock = await new FairMutex(session, 'expired').acquire();
      const entry = entryOf(lock);
      await scope.fixture.expire(session);
      await expect(lock.guarded.put('v', 'x')).rejects.toBeInstanceOf(LockLostError);
      const other = await scope.open();
      const next = await new FairMutex(other, 'expired').acquire({ timeoutMs: scope.fixture.lossDeadlineMs * 2 });
      expect(await next.guarded.get('v')).toBeNull();
      expect(entryOf(next).key).not.toBe(entry.key);
      await next.release();
    });

    it('refuses writes after release (LockLostError) but still reads', async () => {
      const session = await scope.open();
      const lock = await new FairMutex(session, 'released').acquire();
      await lock.guarded.put('v', 'kept');
      await lock.release();
      await expect(lock.guarded.put('v', 'late')).rejects.toBeInstanceOf(LockLostError);
      expect(await lock.guarded.get('v')).toBe('kept');
      const again = await new FairMutex(session, 'released').acquire();
      await again.guarded.delete('v');
      await again.release();
    });

    it('works on a leadership and on a write lock', async () => {
      const session = await scope.open();
      const leadership = await new LeaderElection(session, 'leader', { id: 'w1' }).campaign();
      await leadership.guarded.put('config', '{"rate":5}');
      expect(await leadership.guarded.get('config')).toBe('{"rate":5}');
      await leadership.guarded.delete('config');
      await leadership.resign();
      const write = await new ReadWriteLock(session, 'rw').writeLock.acquire();
      await write.guarded.put('x', '1');
      await write.guarded.delete('x');
      await write.release();
    });

    it('validates names, values and options with typed errors before anything is sent', async () => {
      const session = await scope.open();
      const lock = await new FairMutex(session, 'checks').acquire();
      for (const name of ['', '.', '..', 'a/b', 'a b', '~x', 'x'.repeat(129), 7])
        await expect(lock.guarded.put(name as string, 'v')).rejects.toBeInstanceOf(InvalidNameError);
      await expect(lock.guarded.get('a/b')).rejects.toBeInstanceOf(InvalidNameError);
      await expect(lock.guarded.delete('')).rejects.toBeInstanceOf(InvalidNameError);
      await expect(lock.guarded.put('v', 'x'.repeat(MAX_VALUE_BYTES + 1))).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(lock.guarded.put('v', 42 as unknown as string)).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(lock.guarded.put('v', 'x', { timeout: 5 } as never)).rejects.toThrow(/did you mean "timeoutMs"/);
      await expect(lock.guarded.put('v', 'x', { timeoutMs: -1 })).rejects.toBeInstanceOf(InvalidArgumentError);
      // The largest value fits (multi-byte characters counted in bytes).
      await lock.guarded.put('big', 'é'.repeat(MAX_VALUE_BYTES / 2));
      expect((await lock.guarded.get('big'))?.length).toBe(MAX_VALUE_BYTES / 2);
      await lock.guarded.delete('big');
      expect(await lock.guarded.get('v')).toBeNull();
      await lock.release();
    });

    it('gives up with the signal', async () => {
      const session = await scope.open();
      const lock = await new FairMutex(session, 'bounded').acquire();
      const reason = new Error('stop');
      await expect(lock.guarded.put('v', 'x', { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
      await lock.guarded.put('v', 'x', { timeoutMs: 10_000, signal: new AbortController().signal });
      await lock.guarded.delete('v');
      await lock.release();
    });

    if (!getFixture().url('x').startsWith('postgres'))
      it('refuses a guarded transaction with UnsupportedError', async () => {
        const session = await scope.open();
        const lock = await new FairMutex(session, 'tx').acquire();
        const client = { query: () => Promise.resolve({ rows: [] }) };
        await expect(lock.guarded.transaction(client, async () => undefined)).rejects.toBeInstanceOf(UnsupportedError);
        await lock.release();
      });
  });
}

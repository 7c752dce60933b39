import { describe, expect, it } from 'vitest';

import { InvalidArgumentError, InvalidNameError, LockLostError, UnknownEntryError } from '../../../recipes/errors.js';
import type { LockEvent } from '../../../recipes/events.js';
import { forceRelease } from '../../../recipes/force-release.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { Semaphore } from '../../../recipes/semaphore.js';
import type { Fixture } from '../../harness/backends/fixture.js';
import { useScope } from '../../harness/backends/scope.js';
import { backendOf, entryOf } from '../../harness/internals.js';
import { eventually } from '../../harness/wait.js';

/** Resolves with the signal's reason once it aborts; rejects after `limitMs`. */
function abortedWithin(signal: AbortSignal, limitMs: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`the holder's signal did not abort within ${limitMs} ms`)),
      limitMs,
    );
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve(signal.reason);
      },
      { once: true },
    );
  });
}

/** `forceRelease` (an operator's removal of another session's entry), written once and run on every backend. */
export function forceReleaseContract(getFixture: () => Fixture): void {
  describe(`forceRelease on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it("removes another session's hold: its signal aborts as revoked, the next in line is granted, both sides tell it", async () => {
      const [holder, waiter, operator] = [await scope.open(), await scope.open(), await scope.open()];
      const holderEvents: LockEvent[] = [];
      const operatorEvents: LockEvent[] = [];
      holder.on('lock', (event) => holderEvents.push(event));
      operator.on('lock', (event) => operatorEvents.push(event));
      const held = await new FairMutex(holder, 'jobs').acquire();
      const next = new FairMutex(waiter, 'jobs').acquire({ timeoutMs: 30_000 });
      const mutex = new FairMutex(operator, 'jobs');
      await eventually('the waiter queued', async () => (await mutex.participants()).length === 2);
      const [first] = await mutex.participants();
      expect(first!.key).toBe(entryOf(held).key);

      const revoked = await forceRelease(operator, 'jobs', first!.key);
      expect(revoked).toEqual({
        name: 'jobs',
        key: first!.key,
        kind: 'lock',
        owner: holder.id,
        fencingToken: held.fencingToken,
      });
      const granted = await next;
      expect(granted.fencingToken > held.fencingToken).toBe(true);
      const reason = await abortedWithin(held.signal, scope.fixture.lossDeadlineMs);
      expect(reason).toBeInstanceOf(LockLostError);
      expect(reason).toMatchObject({ code: 'LOCK_LOST', reason: 'revoked' });
      expect((reason as Error).message).toContain('revoked');
      expect(held.held).toBe(false);
      expect(holderEvents.find((event) => event.type === 'lost')).toMatchObject({ revoked: true });
      expect(operatorEvents).toEqual([
        {
          type: 'revoked',
          name: 'jobs',
          kind: 'lock',
          key: first!.key,
          owner: holder.id,
          revokedBy: operator.id,
          fencingToken: held.fencingToken,
        },
      ]);
      await held.release(); // nothing left to delete: no error
      await granted.release();
    });

    it("removes a semaphore holder's permits: the waiter behind them is granted", async () => {
      const [holder, waiter, operator] = [await scope.open(), await scope.open(), await scope.open()];
      const taken = await new Semaphore(holder, 'pool', { permits: 2 }).acquire({ count: 2 });
      const next = new Semaphore(waiter, 'pool', { permits: 2 }).acquire({ timeoutMs: 30_000 });
      const view = new FairMutex(operator, 'pool');
      await eventually('the waiter queued', async () => (await view.participants()).length === 2);
      const revoked = await forceRelease(operator, 'pool', entryOf(taken).key);
      expect(revoked.kind).toBe('semaphore_2_2');
      const granted = await next;
      await expect(abortedWithin(taken.signal, scope.fixture.lossDeadlineMs)).resolves.toMatchObject({
        reason: 'revoked',
      });
      await taken.release();
      await granted.release();
    });

    it('refuses an unknown entry, and an entry of another queue, with UnknownEntryError: nothing removed', async () => {
      const [holder, operator] = [await scope.open(), await scope.open()];
      const held = await new FairMutex(holder, 'a').acquire();
      const key = entryOf(held).key;
      const unknown = forceRelease(operator, 'a', `${key}-nope`);
      await expect(unknown).rejects.toBeInstanceOf(UnknownEntryError);
      await expect(unknown).rejects.toMatchObject({ code: 'UNKNOWN_ENTRY', lockName: 'a' });
      await expect(forceRelease(operator, 'b', key)).rejects.toBeInstanceOf(UnknownEntryError);
      // Straight to the driver: an entry named with another queue is outside it, and is not deleted.
      expect(await backendOf(operator).revoke({ ...entryOf(held), queue: 'b' })).toBe(false);
      expect(held.held).toBe(true);
      expect((await new FairMutex(operator, 'a').participants()).map((p) => p.key)).toEqual([key]);
      await forceRelease(operator, 'a', key);
      await expect(forceRelease(operator, 'a', key)).rejects.toBeInstanceOf(UnknownEntryError);
      await held.release();
    });

    it('refuses bad input with typed errors', async () => {
      const session = await scope.open();
      await expect(forceRelease(session, 'a//b', 'k')).rejects.toBeInstanceOf(InvalidNameError);
      await expect(forceRelease(session, 'a', '')).rejects.toBeInstanceOf(InvalidArgumentError);
      await expect(forceRelease(session, 'a', 'k', { timeout: 5 } as never)).rejects.toBeInstanceOf(
        InvalidArgumentError,
      );
      await expect(forceRelease(session, 'a', 'k', { timeoutMs: -1 })).rejects.toBeInstanceOf(InvalidArgumentError);
      const stop = new AbortController();
      stop.abort(new Error('stop'));
      await expect(forceRelease(session, 'a', 'k', { signal: stop.signal })).rejects.toThrow('stop');
    });
  });
}

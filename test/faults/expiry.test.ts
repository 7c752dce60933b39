import { describe, expect, it } from 'vitest';

import { LockLostError, SessionLostError } from '../../recipes/errors.js';
import { FairMutex } from '../../recipes/mutex.js';
import { type Scope, useScope } from '../harness/backends/scope.js';
import { expectLateWriteRefused, useRegister, writeWhileHeld } from '../harness/checkers/fenced-writes.js';
import { layouts } from '../harness/faults/layouts.js';
import { backendOf } from '../harness/internals.js';
import { eventually } from '../harness/wait.js';

const TRIALS = 5;

/**
 * One trial: the holder's session is ended from the server side while it is connected (ZooKeeper: a
 * second client attaches with the session's id and password and closes it; etcd: another client
 * revokes the lease). Returns how many milliseconds after the next grant the holder was told.
 *
 * Unlike a partition, nothing lets the holder's client foresee this: the server deletes the entry and
 * notifies the waiter at the moment it decides, and the holder hears of it only afterwards (ZooKeeper
 * when it reconnects, etcd at its next keepalive, up to a quarter TTL later). So the two beliefs may
 * overlap here, and the fenced register is what keeps the late holder out: that is what is asserted.
 */
async function expiryTrial(scope: Scope, registerUrl: string, name: string): Promise<number> {
  const fixture = scope.fixture;
  const [expiring, other] = [await scope.open(), await scope.open()];
  const held = await new FairMutex(expiring, name).acquire();
  let abortedAt = Number.NaN;
  held.signal.addEventListener('abort', () => (abortedAt = performance.now()), { once: true });
  await writeWhileHeld(registerUrl, held);
  const next = new FairMutex(other, name)
    .acquire({ timeoutMs: fixture.lossDeadlineMs * 2 })
    .then((lock) => ({ lock, grantedAt: performance.now() }));
  await eventually(
    'waiter queued',
    async () => (await backendOf(other).list(name)).length === 2,
    fixture.lossDeadlineMs,
  );
  await fixture.expire(expiring);
  const { lock, grantedAt } = await next;
  await writeWhileHeld(registerUrl, lock);
  await eventually('the expired holder told', () => held.signal.aborted, fixture.lossDeadlineMs);
  expect(held.signal.reason).toBeInstanceOf(LockLostError);
  expect((held.signal.reason as LockLostError).cause).toBeInstanceOf(SessionLostError);
  expect(expiring.state).toBe('lost');
  await expectLateWriteRefused(registerUrl, held);
  await lock.release();
  expect(await backendOf(other).list(name), 'entries left in the queue after the fault healed').toEqual([]);
  return abortedAt - grantedAt;
}

// The layouts side by side: each trial spends its time waiting for the server to expire a session.
describe.concurrent('server-side expiry', () => {
  describe.each(layouts)('on $name', (layout) => {
    const scope = useScope(() => layout.fixture());
    const register = useRegister();

    it(`the holder is told within the loss deadline and its late write is refused (${TRIALS} trials)`, async () => {
      const overlaps: number[] = [];
      // One after another: the trials write to one register, whose tokens must not interleave.
      for (let trial = 0; trial < TRIALS; trial += 1)
        overlaps.push(await expiryTrial(scope, register().url, `expiry-${trial}`));
      console.info(
        `${layout.name}: server-side expiry, ${TRIALS} late writes refused; the expired holder was told from ` +
          `${Math.min(...overlaps).toFixed(1)} to ${Math.max(...overlaps).toFixed(1)} ms after the next grant (negative: before)`,
      );
    });
  });
});

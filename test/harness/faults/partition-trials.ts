import { expect } from 'vitest';

import { LockLostError, SessionLostError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import type { Scope } from '../backends/scope.js';
import { FencedRegister } from '../checkers/fenced-register.js';
import { expectLateWriteRefused, writeWhileHeld } from '../checkers/fenced-writes.js';
import { backendOf } from '../internals.js';
import { type Layout, throughProxy } from './layouts.js';

/**
 * Partitions a holder from its server (proxy blackhole) while another session waits, `trials` times,
 * `parallel` trials at a time, each with its own lock, proxy, sessions and fenced register. Checks in
 * every trial that the holder's signal aborted with LockLostError (cause SessionLostError) strictly
 * before the waiter was granted, that both wrote to the register while they held, that the cut-off
 * holder's late write was refused, and that the lock's queue is empty once the fault has healed.
 * Returns each trial's gap: milliseconds from the cut-off holder's abort to the next holder's grant.
 */
export async function partitionTrials(
  layout: Layout,
  scope: Scope,
  trials: number,
  parallel: number,
): Promise<number[]> {
  const gaps: number[] = [];
  for (let first = 0; first < trials; first += parallel) {
    const batch = Array.from({ length: Math.min(parallel, trials - first) }, (_, i) =>
      partitionTrial(layout, scope, `partition-${first + i}`),
    );
    const settled = await Promise.allSettled(batch);
    for (const outcome of settled) {
      if (outcome.status === 'rejected') throw outcome.reason;
      gaps.push(outcome.value);
    }
  }
  return gaps;
}

async function partitionTrial(layout: Layout, scope: Scope, name: string): Promise<number> {
  const register = await FencedRegister.start();
  const { proxy, session: cutOff, close } = await throughProxy(layout, scope.namespace);
  try {
    const other = await scope.open();
    const held = await new FairMutex(cutOff, name).acquire();
    await writeWhileHeld(register.url, held);
    let abortedAt = Number.NaN;
    held.signal.addEventListener('abort', () => (abortedAt = performance.now()), { once: true });
    // The server hands the lock on only after it expired the session: a few timeouts bound the wait.
    const next = new FairMutex(other, name)
      .acquire({ timeoutMs: layout.timeoutMs() * 5 })
      .then((lock) => ({ lock, grantedAt: performance.now() }));
    proxy.blackhole();
    const { lock, grantedAt } = await next;
    expect(held.signal.reason).toBeInstanceOf(LockLostError);
    expect((held.signal.reason as LockLostError).cause).toBeInstanceOf(SessionLostError);
    expect(cutOff.state).toBe('lost');
    expect(abortedAt, 'the cut-off holder is told before the next grant').toBeLessThan(grantedAt);
    await writeWhileHeld(register.url, lock);
    await expectLateWriteRefused(register.url, held);
    await lock.release();
    expect(await backendOf(other).list(name), 'entries left in the queue after the fault healed').toEqual([]);
    return grantedAt - abortedAt;
  } finally {
    await close();
    await register.close();
  }
}

import { subscribe, unsubscribe } from 'node:diagnostics_channel';

import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';

import { InvalidArgumentError } from '../../../recipes/errors.js';
import type { LockEvent } from '../../../recipes/events.js';
import { MultiLock } from '../../../recipes/multilock.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { Semaphore } from '../../../recipes/semaphore.js';
import type { HoldMessage } from '../../../recipes/trace.js';
import { BatonMetrics } from '../../../src/metrics.js';
import type { Fixture } from '../../harness/backends/fixture.js';
import { memoryFixture } from '../../harness/backends/memory.js';
import { mysqlFixture } from '../../harness/backends/mysql.js';
import { postgresFixture } from '../../harness/backends/postgres.js';
import { useScope } from '../../harness/backends/scope.js';
import { zkFixture } from '../../harness/backends/zookeeper.js';
import { sample } from '../../harness/checkers/prometheus-sample.js';
import { eventually } from '../../harness/wait.js';

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function heldTooLongOn(getFixture: () => Fixture): void {
  describe(`holdWarningMs on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it('tells heldTooLong once for a hold past the threshold, on the lock events, the channel and the metric', async () => {
      const registry = new Registry();
      const metrics = new BatonMetrics({ registry });
      const session = await scope.open();
      metrics.watch(session, { name: 's' });
      const events: LockEvent[] = [];
      session.on('lock', (event) => events.push(event));
      const published: HoldMessage[] = [];
      const onChannel = (message: unknown): void => void published.push(message as HoldMessage);
      subscribe('baton-locks:hold:heldTooLong', onChannel);
      try {
        const quick = await new FairMutex(session, 'quick').acquire({ holdWarningMs: 300 });
        await quick.release();
        const stuck = await new FairMutex(session, 'stuck').acquire({ holdWarningMs: 100 });
        await eventually('the warning', () => events.some((e) => e.type === 'heldTooLong'));
        await sleep(250); // once only
        await stuck.release();
        await sleep(300); // the quick hold's threshold has passed too: it was released before, so nothing
        const warnings = events.filter((e) => e.type === 'heldTooLong');
        expect(warnings).toHaveLength(1);
        expect(warnings[0]).toMatchObject({ name: 'stuck', kind: 'lock', fencingToken: stuck.fencingToken });
        expect((warnings[0] as { holdMs: number }).holdMs).toBeGreaterThanOrEqual(90);
        expect(events.map((e) => e.type).slice(-3)).toEqual(['granted', 'heldTooLong', 'released']);
        expect(published.map((m) => m.wait.name)).toEqual(['stuck']);
        const text = await registry.metrics();
        expect(sample(text, 'baton_lock_held_too_long_total', { lock: 'stuck', kind: 'lock' })).toBe(1);
        expect(sample(text, 'baton_lock_held_too_long_total', { lock: 'quick', kind: 'lock' })).toBeUndefined();
      } finally {
        unsubscribe('baton-locks:hold:heldTooLong', onChannel);
      }
    });

    it('counts waits under way in baton_lock_waiting and session losses in baton_session_losses_total', async () => {
      const registry = new Registry();
      const metrics = new BatonMetrics({ registry });
      const [a, b] = [await scope.open(), await scope.open()];
      metrics.watch(a, { name: 'a' });
      metrics.watch(b, { name: 'b' });
      const held = await new FairMutex(a, 'q').acquire();
      const waiting = [new FairMutex(b, 'q').acquire(), new FairMutex(b, 'q').acquire()];
      await eventually('two waiters counted', async () => {
        return sample(await registry.metrics(), 'baton_lock_waiting', { lock: 'q', kind: 'lock' }) === 2;
      });
      await held.release();
      for (const next of waiting) await (await next).release();
      let text = await registry.metrics();
      expect(sample(text, 'baton_lock_waiting', { lock: 'q', kind: 'lock' })).toBe(0);
      expect(sample(text, 'baton_session_losses_total', { session: 'a' })).toBe(0);
      await scope.fixture.expire(a);
      await eventually('a lost', () => a.state === 'lost', scope.fixture.lossDeadlineMs + 10_000);
      text = await registry.metrics();
      expect(sample(text, 'baton_session_losses_total', { session: 'a' })).toBe(1);
      expect(sample(text, 'baton_session_losses_total', { session: 'b' })).toBe(0);
    });

    it('refuses a bad holdWarningMs with InvalidArgumentError', async () => {
      const session = await scope.open();
      const mutex = new FairMutex(session, 'x');
      const pool = new Semaphore(session, 'p', { permits: 2 });
      const both = new MultiLock(session, ['m/1', 'm/2']);
      for (const holdWarningMs of [-1, Number.NaN, '5', 2 ** 31]) {
        await expect(mutex.acquire({ holdWarningMs } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(pool.acquire({ holdWarningMs } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
        await expect(both.acquire({ holdWarningMs } as never)).rejects.toBeInstanceOf(InvalidArgumentError);
      }
    });

    it('warns on a Semaphore (acquire, withPermit) and on each lock of a MultiLock (acquire, withLock)', async () => {
      const session = await scope.open();
      const events: LockEvent[] = [];
      session.on('lock', (event) => events.push(event));
      const warned = (name: string): number => events.filter((e) => e.type === 'heldTooLong' && e.name === name).length;
      const pool = new Semaphore(session, 'pool', { permits: 3 });
      const permit = await pool.acquire({ count: 2, holdWarningMs: 50 });
      await pool.withPermit(() => eventually('the withPermit warning', () => warned('pool') === 2), {
        holdWarningMs: 50,
      });
      await permit.release();
      const both = new MultiLock(session, ['accounts/1', 'accounts/2']);
      const locks = await both.acquire({ holdWarningMs: 50 });
      try {
        await eventually('a warning per lock', () => warned('accounts/1') === 1 && warned('accounts/2') === 1);
      } finally {
        await locks.release();
      }
      await both.withLock(() => eventually('withLock warns too', () => warned('accounts/1') === 2), {
        holdWarningMs: 50,
      });
      expect(warned('pool')).toBe(2);
      expect(events.find((e) => e.type === 'heldTooLong' && e.name === 'pool')).toMatchObject({ kind: 'semaphore' });
    });
  });
}

heldTooLongOn(memoryFixture);
heldTooLongOn(() => zkFixture('zkStandalone'));
heldTooLongOn(postgresFixture);
heldTooLongOn(mysqlFixture);

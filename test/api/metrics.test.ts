import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import { register, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';

import type { Session } from '../../recipes/contract.js';
import { LeaderElection } from '../../recipes/election.js';
import { InvalidArgumentError, LockTimeoutError } from '../../recipes/errors.js';
import { MultiLock } from '../../recipes/multilock.js';
import { FairMutex } from '../../recipes/mutex.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import { Semaphore } from '../../recipes/semaphore.js';
import { BatonMetrics } from '../../src/metrics.js';
import { etcdFixture } from '../harness/backends/etcd.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { memoryFixture } from '../harness/backends/memory.js';
import { mysqlFixture } from '../harness/backends/mysql.js';
import { postgresFixture } from '../harness/backends/postgres.js';
import { redisFixture } from '../harness/backends/redis.js';
import { useScope } from '../harness/backends/scope.js';
import { zkFixture } from '../harness/backends/zookeeper.js';
import { sample, series } from '../harness/checkers/prometheus-sample.js';
import { internalsOf } from '../harness/internals.js';
import { eventually } from '../harness/wait.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The session's four state samples, by state. */
function states(text: string, session: string): Record<string, number | undefined> {
  const of = (state: string): number | undefined => sample(text, 'baton_session_state', { session, state });
  return { connected: of('connected'), suspended: of('suspended'), lost: of('lost'), closed: of('closed') };
}

async function cycle(session: Session, name: string): Promise<void> {
  await (await new FairMutex(session, name).acquire()).release();
}

function metricsOn(getFixture: () => Fixture): void {
  describe(`baton-locks/metrics on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it('counts acquisitions, waits, holds, a timeout and a loss; the state gauge follows each session', async () => {
      const fixture = scope.fixture;
      const registry = new Registry();
      const metrics = new BatonMetrics({ registry });
      const [a, b] = [await scope.open(), await scope.open()];
      metrics.watch(a, { name: 'a' });
      metrics.watch(b, { name: 'b' });
      for (let i = 0; i < 3; i += 1) await cycle(a, 'jobs');
      const held = await new FairMutex(a, 'jobs').acquire();
      await expect(new FairMutex(b, 'jobs').acquire({ timeoutMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
      expect(await new FairMutex(b, 'jobs').tryAcquire()).toBeNull();
      await held.release();
      const blocking = await new FairMutex(a, 'handoff').acquire();
      const waiting = new FairMutex(b, 'handoff').acquire();
      await sleep(60);
      await blocking.release();
      await (await waiting).release();
      const rw = new ReadWriteLock(b, 'config');
      await (await rw.writeLock.acquire()).release();
      await (await rw.readLock.acquire()).release();
      const leading = await new LeaderElection(b, 'leader', { id: 'b' }).campaign();
      const lease = await new FairMutex(a, 'lease').acquire();
      await sleep(30);
      await fixture.expire(a);
      await eventually('the holder told', () => lease.signal.aborted, fixture.lossDeadlineMs);
      await lease.release();
      await leading.resign();

      const text = await registry.metrics();
      const jobs = { lock: 'jobs', kind: 'lock' };
      expect(sample(text, 'baton_lock_acquisitions_total', jobs)).toBe(4);
      expect(sample(text, 'baton_lock_timeouts_total', jobs)).toBe(1);
      expect(sample(text, 'baton_lock_losses_total', jobs)).toBeUndefined();
      expect(sample(text, 'baton_lock_acquisitions_total', { lock: 'config', kind: 'write' })).toBe(1);
      expect(sample(text, 'baton_lock_acquisitions_total', { lock: 'config', kind: 'read' })).toBe(1);
      expect(sample(text, 'baton_lock_acquisitions_total', { lock: 'leader', kind: 'candidate' })).toBe(1);
      expect(sample(text, 'baton_lock_acquisitions_total', { lock: 'lease', kind: 'lock' })).toBe(1);
      expect(sample(text, 'baton_lock_losses_total', { lock: 'lease', kind: 'lock' })).toBe(1);
      // Waits are observed for grants only; holds for releases and losses.
      expect(sample(text, 'baton_lock_wait_seconds_count', jobs)).toBe(4);
      expect(sample(text, 'baton_lock_wait_seconds_bucket', { ...jobs, le: '+Inf' })).toBe(4);
      expect(sample(text, 'baton_lock_wait_seconds_bucket', { ...jobs, le: '60' })).toBe(4);
      const handoff = { lock: 'handoff', kind: 'lock' };
      expect(sample(text, 'baton_lock_wait_seconds_count', handoff)).toBe(2);
      expect(sample(text, 'baton_lock_wait_seconds_bucket', { ...handoff, le: '0.05' })).toBeLessThanOrEqual(1); // not the waiter's
      expect(sample(text, 'baton_lock_wait_seconds_sum', handoff)).toBeGreaterThanOrEqual(0.058);
      expect(sample(text, 'baton_lock_wait_seconds_sum', handoff)).toBeLessThan(10);
      expect(sample(text, 'baton_lock_hold_seconds_count', jobs)).toBe(4);
      expect(sample(text, 'baton_lock_hold_seconds_count', { lock: 'lease', kind: 'lock' })).toBe(1);
      expect(sample(text, 'baton_lock_hold_seconds_sum', { lock: 'lease', kind: 'lock' })).toBeGreaterThanOrEqual(
        0.028,
      );
      expect(sample(text, 'baton_lock_hold_seconds_sum', { lock: 'lease', kind: 'lock' })).toBeLessThan(
        fixture.lossDeadlineMs / 1_000 + 5,
      );
      expect(sample(text, 'baton_lock_hold_seconds_bucket', { lock: 'lease', kind: 'lock', le: '0.01' })).toBe(0);
      expect(states(text, 'a')).toEqual({ connected: 0, suspended: 0, lost: 1, closed: 0 });
      expect(states(text, 'b')).toEqual({ connected: 1, suspended: 0, lost: 0, closed: 0 });

      await b.close();
      expect(states(await registry.metrics(), 'b')).toEqual({ connected: 0, suspended: 0, lost: 0, closed: 1 });
    });

    it("counts a semaphore's grants, waits and holds under kind semaphore, and each lock of a MultiLock under kind lock", async () => {
      const registry = new Registry();
      const metrics = new BatonMetrics({ registry });
      const [a, b] = [await scope.open(), await scope.open()];
      metrics.watch(a, { name: 'a' });
      metrics.watch(b, { name: 'b' });
      const all = await new Semaphore(a, 'bank-api', { permits: 2 }).acquire({ count: 2 });
      const waiting = new Semaphore(b, 'bank-api', { permits: 2 }).acquire();
      await expect(new Semaphore(b, 'bank-api', { permits: 2 }).acquire({ timeoutMs: 30 })).rejects.toBeInstanceOf(
        LockTimeoutError,
      );
      await all.release();
      await (await waiting).release();
      await (await new MultiLock(a, ['accounts/1', 'accounts/2']).acquire()).release();
      const text = await registry.metrics();
      const semaphore = { lock: 'bank-api', kind: 'semaphore' };
      expect(sample(text, 'baton_lock_acquisitions_total', semaphore)).toBe(2);
      expect(sample(text, 'baton_lock_timeouts_total', semaphore)).toBe(1);
      expect(sample(text, 'baton_lock_wait_seconds_count', semaphore)).toBe(2);
      expect(sample(text, 'baton_lock_hold_seconds_count', semaphore)).toBe(2);
      for (const lock of ['accounts/1', 'accounts/2']) {
        expect(sample(text, 'baton_lock_acquisitions_total', { lock, kind: 'lock' })).toBe(1);
        expect(sample(text, 'baton_lock_hold_seconds_count', { lock, kind: 'lock' })).toBe(1);
      }
    });

    it('follows a session replaced after its loss, under the same label', async () => {
      const fixture = scope.fixture;
      const registry = new Registry();
      const metrics = new BatonMetrics({ registry });
      const session = await scope.open({ reconnectAfterLoss: true });
      let next: Session | undefined;
      session.on('replaced', (replacement) => (next = replacement));
      metrics.watch(session, { name: 'worker' });
      try {
        const held = await new FairMutex(session, 'jobs').acquire();
        await fixture.expire(session);
        await eventually('a replacement session', () => next !== undefined, fixture.lossDeadlineMs * 3);
        await held.release();
        await cycle(next!, 'jobs');
        await session.close(); // the lost session's end is no longer the label's state
        const text = await registry.metrics();
        expect(sample(text, 'baton_lock_acquisitions_total', { lock: 'jobs', kind: 'lock' })).toBe(2);
        expect(sample(text, 'baton_lock_losses_total', { lock: 'jobs', kind: 'lock' })).toBe(1);
        expect(states(text, 'worker')).toEqual({ connected: 1, suspended: 0, lost: 0, closed: 0 });
      } finally {
        await next?.close();
      }
    });
  });
}

metricsOn(memoryFixture);
metricsOn(() => zkFixture('zkStandalone'));
metricsOn(() => etcdFixture('etcdStandalone'));
metricsOn(postgresFixture);
metricsOn(mysqlFixture);
metricsOn(redisFixture);

describe('baton-locks/metrics watching and options', () => {
  const scope = useScope(memoryFixture);

  it('unwatch stops the counting and removes the session state series; a second watch counts nothing twice', async () => {
    const registry = new Registry();
    const metrics = new BatonMetrics({ registry });
    const session = await scope.open();
    const unwatch = metrics.watch(session);
    const again = metrics.watch(session, { name: 'again' });
    await cycle(session, 'jobs');
    expect(series(await registry.metrics(), 'baton_session_state')).toHaveLength(4);
    unwatch();
    again();
    await cycle(session, 'jobs');
    const text = await registry.metrics();
    expect(sample(text, 'baton_lock_acquisitions_total', { lock: 'jobs', kind: 'lock' })).toBe(1);
    expect(series(text, 'baton_session_state')).toEqual([]);
    expect(internalsOf(session).reporting).toBe(false);
  });

  it('a successor the user watches in their own replaced listener is counted once', async () => {
    const registry = new Registry();
    const metrics = new BatonMetrics({ registry });
    const session = await scope.open({ reconnectAfterLoss: true });
    let next: Session | undefined;
    session.on('replaced', (replacement) => {
      next = replacement;
      metrics.watch(replacement, { name: 'successor' });
    });
    metrics.watch(session, { name: 'first' });
    try {
      await scope.fixture.expire(session);
      await eventually('a replacement session', () => next !== undefined);
      await cycle(next!, 'jobs');
      const text = await registry.metrics();
      expect(sample(text, 'baton_lock_acquisitions_total', { lock: 'jobs', kind: 'lock' })).toBe(1);
      expect(states(text, 'successor')).toEqual({ connected: 1, suspended: 0, lost: 0, closed: 0 });
    } finally {
      await next?.close();
    }
  });

  it('takes a prefix, a lock label mapping and buckets; registers in the default registry unless told', async () => {
    const registry = new Registry();
    const metrics = new BatonMetrics({
      registry,
      prefix: 'app_',
      lockLabel: (name) => name.split('/')[0]!,
      waitBuckets: [0.5, 2],
      holdBuckets: [7],
    });
    const session = await scope.open();
    metrics.watch(session, { name: 'main' });
    await cycle(session, 'orders/1');
    await cycle(session, 'orders/2');
    const text = await registry.metrics();
    expect(sample(text, 'app_lock_acquisitions_total', { lock: 'orders', kind: 'lock' })).toBe(2);
    expect(series(text, 'app_lock_wait_seconds_bucket')).toEqual([
      '{le="0.5",lock="orders",kind="lock"}',
      '{le="2",lock="orders",kind="lock"}',
      '{le="+Inf",lock="orders",kind="lock"}',
    ]);
    expect(series(text, 'app_lock_hold_seconds_bucket')).toHaveLength(2);
    expect(sample(text, 'app_session_state', { session: 'main', state: 'connected' })).toBe(1);

    const global = new BatonMetrics({ prefix: 'baton_default_registry_' });
    try {
      expect(global.registry).toBe(register);
      expect(register.getSingleMetric('baton_default_registry_lock_wait_seconds')).toBeDefined();
    } finally {
      for (const metric of await register.getMetricsAsJSON()) {
        if (metric.name.startsWith('baton_default_registry_')) register.removeSingleMetric(metric.name);
      }
    }
  });

  it('refuses bad options and a non-session with InvalidArgumentError', async () => {
    const registry = new Registry();
    for (const options of [
      { prefix: '1x' },
      { prefix: 7 },
      { lockLabel: 'x' },
      { waitBuckets: [] },
      { holdBuckets: [2, 1] },
      { waitBuckets: [0, 1] },
    ]) {
      expect(() => new BatonMetrics({ registry, ...(options as object) }), JSON.stringify(options)).toThrow(
        InvalidArgumentError,
      );
    }
    expect(() => new BatonMetrics(null as never)).toThrow(InvalidArgumentError);
    const metrics = new BatonMetrics({ registry });
    expect(() => metrics.watch({} as Session)).toThrow(InvalidArgumentError);
    expect(() => metrics.watch(null as never)).toThrow(InvalidArgumentError);
    const session = await scope.open();
    expect(() => metrics.watch(session, { name: '' })).toThrow(InvalidArgumentError);
  });
});

describe('baton-locks/metrics without prom-client', () => {
  it('fails to import with a message saying to install prom-client', () => {
    // A separate Node in which prom-client cannot be resolved, as in a project that never installed it.
    const script =
      "import('./src/metrics.ts').then(() => console.log('loaded'), (e) => console.log(JSON.stringify({ code: e.code, message: e.message, cause: e.cause?.code })))";
    const run = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '--import',
        './test/harness/workers/hide-prom-client.mjs',
        '--input-type=module',
        '-e',
        script,
      ],
      {
        cwd: ROOT,
        encoding: 'utf8',
        timeout: 60_000,
      },
    );
    expect(run.status, run.stderr).toBe(0);
    const outcome = JSON.parse(run.stdout) as { code: string; message: string; cause: string };
    expect(outcome.message).toContain('npm install prom-client');
    expect(outcome).toMatchObject({ code: 'MISSING_DEPENDENCY', cause: 'ERR_MODULE_NOT_FOUND' });
  });
});

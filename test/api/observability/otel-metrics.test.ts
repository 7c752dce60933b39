import type { Attributes } from '@opentelemetry/api';
import {
  AggregationTemporality,
  type DataPoint,
  type Histogram,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { instrumentLocks } from 'baton-locks/otel';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

import { LockTimeoutError } from '../../../recipes/errors.js';
import { entryOf } from '../../../recipes/handle.js';
import { FairMutex } from '../../../recipes/mutex.js';
import type { Fixture } from '../../harness/backends/fixture.js';
import { memoryFixture } from '../../harness/backends/memory.js';
import { mysqlFixture } from '../../harness/backends/mysql.js';
import { postgresFixture } from '../../harness/backends/postgres.js';
import { useScope } from '../../harness/backends/scope.js';
import { eventually } from '../../harness/wait.js';

/** A real SDK meter provider whose reader is collected on demand (the export interval never comes). */
function useMeters(): { collect: () => Promise<Map<string, DataPoint<unknown>[]>>; stop: () => void } {
  let reader: PeriodicExportingMetricReader;
  let provider: MeterProvider;
  let stop: () => void = () => undefined;
  beforeEach(() => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
    provider = new MeterProvider({ readers: [reader] });
    stop = instrumentLocks({ metrics: true, meterProvider: provider, lockLabel: (name) => name.split('/')[0]! });
  });
  afterEach(async () => {
    stop();
    await provider.shutdown();
  });
  return {
    stop: () => stop(),
    async collect() {
      const { resourceMetrics, errors } = await reader.collect();
      expect(errors).toEqual([]);
      const byName = new Map<string, DataPoint<unknown>[]>();
      for (const scope of resourceMetrics.scopeMetrics)
        for (const metric of scope.metrics) byName.set(metric.descriptor.name, metric.dataPoints);
      return byName;
    },
  };
}

function pointOf<T>(points: DataPoint<unknown>[] | undefined, attributes: Attributes): T | undefined {
  const point = points?.find((p) => Object.entries(attributes).every(([key, value]) => p.attributes[key] === value));
  return point?.value as T | undefined;
}

function metricsOn(getFixture: () => Fixture, backend: string): void {
  describe(`baton-locks/otel metrics: true on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);
    const meters = useMeters();

    it('records waits, holds, acquisitions, timeouts and losses with the lock label', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      for (let i = 0; i < 3; i++) await (await new FairMutex(a, 'jobs/1').acquire()).release();
      const held = await new FairMutex(a, 'jobs/2').acquire();
      await expect(new FairMutex(b, 'jobs/2').acquire({ timeoutMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
      await scope.fixture.removeEntry(entryOf(held).key);
      await eventually('the loss', () => !held.held, 15_000);
      await held.release();

      const metrics = await meters.collect();
      const label = { 'baton.lock.name': 'jobs', 'baton.lock.kind': 'lock', 'baton.backend': backend };
      expect(pointOf<number>(metrics.get('baton.lock.acquisitions'), label)).toBe(4);
      expect(pointOf<number>(metrics.get('baton.lock.timeouts'), label)).toBe(1);
      expect(pointOf<number>(metrics.get('baton.lock.losses'), label)).toBe(1);
      const waits = pointOf<Histogram>(metrics.get('baton.lock.wait.duration'), label);
      expect(waits?.count).toBe(4);
      expect(waits?.sum).toBeGreaterThanOrEqual(0);
      const holds = pointOf<Histogram>(metrics.get('baton.lock.hold.duration'), label);
      expect(holds?.count).toBe(4); // three releases and the loss
      expect(holds?.sum).toBeGreaterThan(0);
      // The label, not the full name, is the dimension: no series per lock name.
      expect(pointOf(metrics.get('baton.lock.acquisitions'), { 'baton.lock.name': 'jobs/1' })).toBeUndefined();
    });

    it('counts a hold past holdWarningMs in baton.lock.held_too_long', async () => {
      const session = await scope.open();
      const lock = await new FairMutex(session, 'slow/1').acquire({ holdWarningMs: 50 });
      try {
        await eventually('the warning counted', async () => {
          const metrics = await meters.collect();
          return pointOf<number>(metrics.get('baton.lock.held_too_long'), { 'baton.lock.name': 'slow' }) === 1;
        });
      } finally {
        await lock.release();
      }
    });
  });
}

function gaugesOn(getFixture: () => Fixture, backend: string): void {
  describe(`baton-locks/otel up-down counters on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);
    const meters = useMeters();
    const lock = { 'baton.lock.name': 'jobs', 'baton.lock.kind': 'lock', 'baton.backend': backend };
    const connected = { 'baton.session.state': 'connected', 'baton.backend': backend };
    const suspended = { 'baton.session.state': 'suspended', 'baton.backend': backend };
    const waiting = async (): Promise<number | undefined> =>
      pointOf<number>((await meters.collect()).get('baton.lock.waiting'), lock);

    it('counts waits under way in baton.lock.waiting, back to zero as they are granted or time out', async () => {
      const [a, b, c] = [await scope.open(), await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'jobs/1').acquire();
      const queued = new FairMutex(b, 'jobs/1').acquire();
      const third = new FairMutex(c, 'jobs/1').acquire();
      await eventually('two waits counted', async () => (await waiting()) === 2);
      await held.release();
      // The two enqueues raced: either may be next in line, and the other waits for it.
      const next = await Promise.race([queued, third]);
      await next.release();
      for (const handle of await Promise.all([queued, third])) if (handle !== next) await handle.release();
      expect(await waiting()).toBe(0);
      const blocker = await new FairMutex(b, 'jobs/2').acquire();
      await expect(new FairMutex(c, 'jobs/2').acquire({ timeoutMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
      expect(await waiting()).toBe(0);
      await blocker.release();
    });

    it('counts live sessions by state in baton.session.count and losses in baton.session.losses', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      let metrics = await meters.collect();
      expect(pointOf<number>(metrics.get('baton.session.count'), connected)).toBe(2);
      expect(pointOf<number>(metrics.get('baton.session.losses'), { 'baton.backend': backend }) ?? 0).toBe(0);
      await scope.fixture.expire(a);
      await eventually('the loss', () => a.state === 'lost', scope.fixture.lossDeadlineMs);
      metrics = await meters.collect();
      // The lost session is no longer live: counted once as a loss, not kept under a state.
      expect(pointOf<number>(metrics.get('baton.session.count'), connected)).toBe(1);
      expect(pointOf<number>(metrics.get('baton.session.losses'), { 'baton.backend': backend })).toBe(1);
      await a.close();
      await b.close();
      metrics = await meters.collect();
      expect(pointOf<number>(metrics.get('baton.session.count'), connected)).toBe(0);
      expect(pointOf<number>(metrics.get('baton.session.count'), suspended) ?? 0).toBe(0);
      expect(pointOf<number>(metrics.get('baton.session.losses'), { 'baton.backend': backend })).toBe(1);
    });

    it('takes back what its up-down counters hold when stopped: a stopped instrumentation reads zero', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'jobs/3').acquire();
      const queued = new FairMutex(b, 'jobs/3').acquire();
      try {
        await eventually('the wait counted', async () => (await waiting()) === 1);
        meters.stop();
        const metrics = await meters.collect();
        expect(pointOf<number>(metrics.get('baton.lock.waiting'), lock)).toBe(0);
        expect(pointOf<number>(metrics.get('baton.session.count'), connected)).toBe(0);
      } finally {
        await held.release();
        await (await queued).release();
      }
    });
  });
}

metricsOn(memoryFixture, 'memory');
gaugesOn(memoryFixture, 'memory');
gaugesOn(postgresFixture, 'postgresql');
metricsOn(postgresFixture, 'postgresql');
gaugesOn(mysqlFixture, 'mysql');
metricsOn(mysqlFixture, 'mysql');

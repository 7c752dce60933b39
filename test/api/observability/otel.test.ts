import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { context, type Span, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { instrumentLocks } from 'baton-locks/otel';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

import { LeaderElection } from '../../../recipes/election.js';
import { InvalidArgumentError, LockTimeoutError } from '../../../recipes/errors.js';
import { MultiLock } from '../../../recipes/multilock.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { Semaphore } from '../../../recipes/semaphore.js';
import { etcdFixture } from '../../harness/backends/etcd.js';
import type { Fixture } from '../../harness/backends/fixture.js';
import { memoryFixture } from '../../harness/backends/memory.js';
import { mysqlFixture } from '../../harness/backends/mysql.js';
import { postgresFixture } from '../../harness/backends/postgres.js';
import { redisFixture } from '../../harness/backends/redis.js';
import { useScope } from '../../harness/backends/scope.js';
import { zkFixture } from '../../harness/backends/zookeeper.js';
import { makeTempDir, removeTempDir } from '../../harness/servers/process.js';
import { eventually } from '../../harness/wait.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));

const contextManager = new AsyncLocalStorageContextManager();
beforeAll(() => {
  context.setGlobalContextManager(contextManager.enable());
});
afterAll(() => {
  context.disable();
});

/** A real SDK tracer provider writing to memory, and baton's instrumentation on it. */
function useTracing(): { readonly exporter: InMemorySpanExporter; readonly provider: BasicTracerProvider } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  let stop: () => void = () => undefined;
  beforeAll(() => {
    stop = instrumentLocks({ tracerProvider: provider });
  });
  afterEach(() => exporter.reset());
  afterAll(() => stop());
  return { exporter, provider };
}

function spansNamed(exporter: InMemorySpanExporter, name: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((span) => span.name === name);
}

function childOf(span: ReadableSpan, parent: { spanContext(): { spanId: string; traceId: string } }): boolean {
  const { spanId, traceId } = parent.spanContext();
  return span.parentSpanContext?.spanId === spanId && span.spanContext().traceId === traceId;
}

/** Runs `body` inside an active span of the caller's own, as an HTTP handler's span would be. */
function inRequestSpan<T>(provider: BasicTracerProvider, body: (span: Span) => Promise<T>): Promise<T> {
  return provider.getTracer('test').startActiveSpan('request', async (span) => {
    try {
      return await body(span);
    } finally {
      span.end();
    }
  });
}

function otelOn(getFixture: () => Fixture, backend: string): void {
  describe(`baton-locks/otel on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);
    const { exporter, provider } = useTracing();

    it("makes a span per wait with the lock's attributes, parented to the caller's span; a hold span with its events", async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      let request: Span | undefined;
      const first = await inRequestSpan(provider, async (span) => {
        request = span;
        return new FairMutex(a, 'payments/settlement').acquire({ timeoutMs: 5_000 });
      });
      const second = inRequestSpan(provider, () => new FairMutex(b, 'payments/settlement').acquire());
      await eventually(
        'the second waiter queued',
        async () => (await scope.fixture.entries(scope.namespace)).length === 2,
      );
      await new Promise((resolve) => setTimeout(resolve, 50));
      await first.release();
      const next = await second;
      await next.release();
      await eventually('both holds ended', () => spansNamed(exporter, 'baton.hold').length === 2);

      const waits = spansNamed(exporter, 'baton.acquire');
      expect(waits).toHaveLength(2);
      const [w1, w2] = waits as [ReadableSpan, ReadableSpan];
      expect(childOf(w1, request!)).toBe(true);
      expect(w1.attributes).toMatchObject({
        'baton.lock.name': 'payments/settlement',
        'baton.recipe': 'mutex',
        'baton.lock.kind': 'lock',
        'baton.backend': backend,
        'baton.session.id': a.id,
        'baton.lock.outcome': 'granted',
        'baton.lock.queue.position': 0,
        'baton.lock.fencing_token': first.fencingToken.toString(),
        'baton.lock.timeout': 5,
        'baton.lock.try': false,
      });
      expect(w2.attributes).toMatchObject({
        'baton.lock.outcome': 'granted',
        'baton.lock.queue.position': 1,
        'baton.lock.fencing_token': next.fencingToken.toString(),
      });
      expect(w2.attributes['baton.lock.wait.duration']).toBeGreaterThanOrEqual(0.04);
      expect(w1.events.map((e) => e.name)).toEqual(['baton.lock.granted']);
      const holds = spansNamed(exporter, 'baton.hold');
      const h1 = holds.find((h) => h.attributes['baton.lock.fencing_token'] === first.fencingToken.toString())!;
      expect(childOf(h1, { spanContext: () => w1.spanContext() })).toBe(true);
      expect(h1.events.map((e) => e.name)).toEqual(['baton.lock.released']);
      expect(h1.attributes['baton.lock.hold.duration']).toBeGreaterThanOrEqual(0.04);
    });

    it('says timed_out (an error), busy for a tryAcquire, and lost on the hold span of a lock deleted under it', async () => {
      const [a, b] = [await scope.open(), await scope.open()];
      const held = await new FairMutex(a, 'jobs').acquire();
      await expect(new FairMutex(b, 'jobs').acquire({ timeoutMs: 50 })).rejects.toBeInstanceOf(LockTimeoutError);
      expect(await new FairMutex(b, 'jobs').tryAcquire()).toBeNull();
      const [timedOut, busy] = spansNamed(exporter, 'baton.acquire').slice(1) as [ReadableSpan, ReadableSpan];
      expect(timedOut.attributes).toMatchObject({
        'baton.lock.outcome': 'timed_out',
        'error.type': 'LockTimeoutError',
        'baton.lock.queue.position': 1,
      });
      expect(timedOut.status.code).toBe(2); // SpanStatusCode.ERROR
      expect(busy.attributes).toMatchObject({ 'baton.lock.outcome': 'busy', 'baton.lock.try': true });
      expect(busy.status.code).toBe(0);

      const { entryOf } = await import('../../../recipes/handle.js');
      await scope.fixture.removeEntry(entryOf(held).key);
      await eventually('the hold span ended', () => spansNamed(exporter, 'baton.hold').length === 1, 15_000);
      const hold = spansNamed(exporter, 'baton.hold')[0]!;
      expect(hold.events.map((e) => e.name)).toEqual(['baton.lock.lost', 'exception']);
      expect(hold.attributes['error.type']).toBe('LockLostError');
      await held.release();
    });

    it('names campaigns and permits by their operation', async () => {
      const session = await scope.open();
      const leadership = await new LeaderElection(session, 'scheduler', { id: 'w-1' }).campaign();
      const permit = await new Semaphore(session, 'bank-api', { permits: 2 }).acquire({ count: 2 });
      await leadership.resign();
      await permit.release();
      expect(spansNamed(exporter, 'baton.campaign')[0]?.attributes).toMatchObject({
        'baton.recipe': 'leader_election',
        'baton.lock.kind': 'candidate',
        'baton.lock.outcome': 'granted',
      });
      expect(spansNamed(exporter, 'baton.permits')[0]?.attributes).toMatchObject({
        'baton.recipe': 'semaphore',
        'baton.lock.name': 'bank-api',
        'baton.lock.outcome': 'granted',
      });
    });

    it("says multilock for a MultiLock's locks, on wait and hold spans; mutex for a FairMutex on the same name", async () => {
      const session = await scope.open();
      await (await new MultiLock(session, ['accounts/2', 'accounts/1']).acquire()).release();
      await (await new FairMutex(session, 'accounts/1').acquire()).release();
      const waits = spansNamed(exporter, 'baton.acquire').map((s) => [
        s.attributes['baton.lock.name'],
        s.attributes['baton.recipe'],
      ]);
      expect(waits).toEqual([
        ['accounts/1', 'multilock'],
        ['accounts/2', 'multilock'],
        ['accounts/1', 'mutex'],
      ]);
      const holds = spansNamed(exporter, 'baton.hold').map((s) => s.attributes['baton.recipe']);
      expect(holds.sort()).toEqual(['multilock', 'multilock', 'mutex']);
    });
  });
}

otelOn(memoryFixture, 'memory');
otelOn(() => zkFixture('zkStandalone'), 'zookeeper');
otelOn(() => etcdFixture('etcdStandalone'), 'etcd');
otelOn(postgresFixture, 'postgresql');
otelOn(mysqlFixture, 'mysql');
otelOn(redisFixture, 'redis');

describe('instrumentLocks options', () => {
  it('refuses unknown keys and bad values with InvalidArgumentError', () => {
    for (const options of [
      { tracerProvider: {} },
      { meterProvider: 3 },
      { metrics: 'yes' },
      { lockLabel: 'x' },
      { tracerProvder: trace.getTracerProvider() },
    ]) {
      expect(() => instrumentLocks(options as never), JSON.stringify(options)).toThrow(InvalidArgumentError);
    }
    expect(() => instrumentLocks(null as never)).toThrow(InvalidArgumentError);
  });
});

describe('without @opentelemetry/api', () => {
  function runHidden(script: string): { stdout: string; attempts: string[] } {
    const dir = makeTempDir('baton-otel-');
    const log = join(dir, 'resolved.log');
    try {
      const run = spawnSync(
        process.execPath,
        [
          '--import',
          'tsx',
          '--import',
          './test/harness/workers/hide-otel-api.mjs',
          '--input-type=module',
          '-e',
          script,
        ],
        { cwd: ROOT, encoding: 'utf8', timeout: 60_000, env: { ...process.env, BATON_RESOLVE_LOG: log } },
      );
      expect(run.status, run.stderr).toBe(0);
      let attempts: string[] = [];
      try {
        attempts = readFileSync(log, 'utf8').split('\n').filter(Boolean);
      } catch {
        // no attempt, no file
      }
      return { stdout: run.stdout, attempts };
    } finally {
      removeTempDir(dir);
    }
  }

  it('the package takes, waits for and releases locks without ever asking for it', () => {
    const script = [
      "const { connect, FairMutex } = await import('./src/index.ts');",
      "const session = await connect('memory://no-otel');",
      "session.on('lock', () => undefined);",
      "const mutex = new FairMutex(session, 'a');",
      'const held = await mutex.acquire();',
      'const next = mutex.acquire();',
      'await held.release(); await (await next).release();',
      'await session.close();',
      "console.log('ok');",
    ].join('\n');
    const { stdout, attempts } = runHidden(script);
    expect(stdout.trim()).toBe('ok');
    expect(attempts).toEqual([]);
  });

  it('baton-locks/otel fails to import with a message saying to install it', () => {
    const script =
      "import('./src/otel.ts').then(() => console.log('loaded'), (e) => console.log(JSON.stringify({ code: e.code, message: e.message })))";
    const { stdout, attempts } = runHidden(script);
    const outcome = JSON.parse(stdout) as { code: string; message: string };
    expect(outcome.code).toBe('MISSING_DEPENDENCY');
    expect(outcome.message).toContain('npm install @opentelemetry/api');
    // The check above is only worth something if the hook did hide it.
    expect(attempts).toContain('@opentelemetry/api');
  });
});

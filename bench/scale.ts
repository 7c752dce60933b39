import { Redis } from 'ioredis';

import type { ConnectOptions } from '../src/connect.js';
import { postgresCounters } from '../src/testing.js';
import type { Case, Context } from './case.js';
import { unaryHandled } from './etcd-metrics.js';
import { fixed, times } from './report.js';
import { etcdFloor, type FloorQueue, postgresFloor, redisFloor, zkFloor } from './scale-floors.js';
import { batonQueue, floorQueue, type QueueOutcome, WAITER_SESSIONS } from './scale-queue.js';
import { printScaleTable, type ScaleRow } from './scale-table.js';
import { heading } from './table.js';
import { zkMetrics } from './zk-metrics.js';

/** How a scale case reaches one backend: baton's URL, the request counter, and the raw floor. */
interface Setup {
  readonly url: string;
  readonly options: ConnectOptions;
  /** Requests so far; baton's and the floor's are counted the same way on a backend. */
  batonRequests(): Promise<number>;
  openFloor(n: number): Promise<{ floor: FloorQueue; requests: () => Promise<number> }>;
  /** How the requests are counted, for the table's heading. */
  readonly counted: string;
  close(): Promise<void>;
}

/** A counter read from the server, less the one request each reading itself adds. */
function lessReadings(read: () => Promise<number>, perReading: number): () => Promise<number> {
  let readings = 0;
  return async () => (await read()) - perReading * readings++;
}

async function zkSetup(context: Context): Promise<Setup> {
  const hosts = await context.zk();
  const requests = lessReadings(async () => (await zkMetrics(hosts)).packetsReceived, 1);
  return {
    url: `zk://${hosts}/bench`,
    options: {},
    batonRequests: requests,
    openFloor: async (n) => ({ floor: await zkFloor(hosts, `/bench-scale-floor/${n}`, WAITER_SESSIONS), requests }),
    counted: 'packets the server received (mntr), pings included',
    close: async () => undefined,
  };
}

async function etcdSetup(context: Context): Promise<Setup> {
  const endpoint = await context.etcd();
  const requests = (): Promise<number> => unaryHandled(endpoint);
  return {
    url: `etcd://${endpoint.replace(/^https?:\/\//, '')}/bench`,
    options: {},
    batonRequests: requests,
    openFloor: async (n) => ({ floor: await etcdFloor(endpoint, `bench-scale-floor/${n}/`), requests }),
    counted: 'unary gRPC requests the server handled (/metrics); watch creates are stream messages, not counted',
    close: async () => undefined,
  };
}

async function postgresSetup(context: Context): Promise<Setup> {
  const url = await context.postgres();
  const withNamespace = new URL(url);
  withNamespace.searchParams.set('namespace', 'bench');
  return {
    url: withNamespace.toString(),
    options: {},
    batonRequests: async () => postgresCounters.statements,
    openFloor: async (n) => {
      const floor = await postgresFloor(url, `bench_scale_floor_${n}`);
      return { floor, requests: async () => floor.requests };
    },
    counted: "statements counted at the client (baton's request connections; heartbeats and LISTEN not counted)",
    close: async () => undefined,
  };
}

async function redisSetup(context: Context): Promise<Setup> {
  const url = await context.redis();
  const admin = new Redis(url);
  const requests = lessReadings(async () => {
    const line = (await admin.info('stats')).split('\n').find((l) => l.startsWith('total_commands_processed:'));
    return Number(line?.split(':')[1]);
  }, 1);
  return {
    url: `${url}?namespace=bench`,
    options: {},
    batonRequests: requests,
    openFloor: async (n) => ({ floor: await redisFloor(url, `bench-scale-floor:${n}`), requests }),
    counted: 'commands the server processed (INFO stats), heartbeats included',
    close: async () => void admin.disconnect(),
  };
}

/** At each N: baton's run, then the floor's, on fresh names. */
async function measure(setup: Setup, ns: readonly number[]): Promise<ScaleRow[]> {
  const rows: ScaleRow[] = [];
  for (const n of ns) {
    const baton = await batonQueue(setup.url, setup.options, `scale-${n}-${Date.now()}`, n, () =>
      setup.batonRequests(),
    );
    const { floor, requests } = await setup.openFloor(n);
    rows.push({ n, baton, floor: await floorQueue(floor, n, requests) });
    process.stdout.write(`  N=${n}: baton ${describe(baton)}; floor ${describe(rows.at(-1)!.floor)}\n`);
  }
  return rows;
}

function describe(outcome: QueueOutcome): string {
  if (outcome.didNotFinish !== undefined) return `did not finish: ${outcome.didNotFinish}`;
  return `queued in ${outcome.queueMs!.toFixed(0)} ms, drained in ${outcome.drainMs!.toFixed(0)} ms`;
}

/** The targets for the slope (figure at the largest N / figure at 100) of baton's figures. */
function reportScale(context: Context, label: string, rows: readonly ScaleRow[]): void {
  const { report } = context;
  for (const { n, baton } of rows)
    if (baton.didNotFinish !== undefined)
      report.holds(1, `${label} scale N=${n} finished`, false, `did not finish: ${baton.didNotFinish}`, 'finishes');
  const lost = rows.reduce((sum, row) => sum + (row.baton.sessionsLost ?? 0), 0);
  report.holds(1, `${label} scale: no session lost at any N`, lost === 0, `${lost} lost`, '0 lost');
  const first = rows[0];
  const last = rows.at(-1);
  const done = (row: ScaleRow | undefined): boolean => row !== undefined && row.baton.didNotFinish === undefined;
  const heaps = rows.flatMap((row) => (done(row) ? [row.baton.heapBytesPerWaiter!] : []));
  if (heaps.length > 0)
    report.atMost(
      1,
      `${label} scale: heap per queued waiter, largest at any N`,
      Math.max(...heaps) / 1024,
      2,
      fixed(2, ' KiB'),
    );
  if (first === undefined || last === undefined || first === last || !done(first) || !done(last)) return;
  const slope = (figure: (o: QueueOutcome) => number): number => figure(last.baton) / figure(first.baton);
  const floorSlope = (figure: (o: QueueOutcome) => number): string =>
    done(last) && last.floor.didNotFinish === undefined && first.floor.didNotFinish === undefined
      ? `(floor ${times(figure(last.floor) / figure(first.floor))})`
      : '(floor did not finish)';
  const span = `N=${last.n}/N=${first.n}`;
  const perHandoff = (o: QueueOutcome): number => o.drainMs! / o.n;
  const requestsPerHandoff = (o: QueueOutcome): number => o.requestsDraining! / o.n;
  const queuePerWaiter = (o: QueueOutcome): number => o.queueMs! / o.n;
  report.atMost(1, `${label} scale: time per handoff ${span}`, slope(perHandoff), 1.5, times, floorSlope(perHandoff));
  report.atMost(
    1,
    `${label} scale: requests per handoff ${span}`,
    slope(requestsPerHandoff),
    1.05,
    times,
    floorSlope(requestsPerHandoff),
  );
  report.atMost(
    1,
    `${label} scale: time to queue per waiter ${span}`,
    slope(queuePerWaiter),
    1.5,
    times,
    floorSlope(queuePerWaiter),
  );
}

function scaleCase(name: string, label: string, open: (context: Context) => Promise<Setup>): Case {
  return {
    name,
    async run(context) {
      const setup = await open(context);
      try {
        heading(`1. ${label} scale: N waiters on one lock, over ${WAITER_SESSIONS} sessions, a fifth holding`);
        process.stdout.write(`requests: ${setup.counted}\n`);
        const rows = await measure(setup, context.scaleN);
        printScaleTable(label, rows);
        reportScale(context, label, rows);
        return rows;
      } finally {
        await setup.close();
      }
    },
  };
}

export const zkScale = scaleCase('zk.scale', 'ZK', zkSetup);
export const etcdScale = scaleCase('etcd.scale', 'etcd', etcdSetup);
export const postgresScale = scaleCase('postgres.scale', 'PostgreSQL', postgresSetup);
export const redisScale = scaleCase('redis.scale', 'Redis', redisSetup);

import { Redis } from 'ioredis';
import pg from 'pg';

import type { ConnectOptions } from '../src/connect.js';
import { postgresCounters } from '../src/testing.js';
import type { Case, Context } from './case.js';
import { unaryHandled } from './etcd-metrics.js';
import { etcdHeldFloor, type HeldFloor, postgresHeldFloor, redisHeldFloor, zkHeldFloor } from './held-floors.js';
import { fixed, times } from './report.js';
import { etcdFloor, type FloorQueue, postgresFloor, redisFloor, zkFloor } from './scale-floors.js';
import { heldLocks, type HeldOutcome } from './scale-held.js';
import { batonQueue, floorQueue, type QueueOutcome, WAITER_SESSIONS } from './scale-queue.js';
import { reportHeld, reportSessions } from './scale-report.js';
import { idleSessions, type SessionsOutcome } from './scale-sessions.js';
import { printScaleTable, type ScaleRow } from './scale-table.js';
import { heading } from './table.js';
import { zkMetrics } from './zk-metrics.js';

/**
 * The session timeout of the waiters' and holders' sessions: the 30 s of the issue's own trial (with
 * the default 10 s, a quick run on this loaded machine lost etcd and Redis sessions at N = 1,000).
 * The idle sessions of part 3 keep the default.
 */
export const SESSION_TIMEOUT_MS = 30_000;

/** How a scale case reaches one backend: baton's URL, the request counter, and the raw floor. */
export interface Setup {
  readonly url: string;
  readonly options: ConnectOptions;
  /** Requests so far; baton's and the floor's are counted the same way on a backend. */
  batonRequests(): Promise<number>;
  openFloor(n: number): Promise<{ floor: FloorQueue; requests: () => Promise<number> }>;
  /** How the requests are counted, for the table's heading. */
  readonly counted: string;
  /** Requests so far, heartbeats included (PostgreSQL: transactions the server counted). */
  idleRequests(): Promise<number>;
  readonly heldFloor: HeldFloor;
  readonly serverPid: number | undefined;
  close(): Promise<void>;
}

/** A counter read from the server, less the one request each reading itself adds. */
export function lessReadings(read: () => Promise<number>, perReading: number): () => Promise<number> {
  let readings = 0;
  return async () => (await read()) - perReading * readings++;
}

async function zkSetup(context: Context): Promise<Setup> {
  const hosts = await context.zk();
  const requests = lessReadings(async () => (await zkMetrics(hosts)).packetsReceived, 1);
  return {
    url: `zk://${hosts}/bench`,
    options: { sessionTimeoutMs: SESSION_TIMEOUT_MS },
    batonRequests: requests,
    openFloor: async (n) => ({ floor: await zkFloor(hosts, `/bench-scale-floor/${n}`, WAITER_SESSIONS), requests }),
    counted: 'packets the server received (mntr), pings included',
    idleRequests: requests,
    heldFloor: zkHeldFloor(hosts, '/bench-held-floor'),
    serverPid: context.serverPid('zk'),
    close: async () => undefined,
  };
}

async function etcdSetup(context: Context): Promise<Setup> {
  const endpoint = await context.etcd();
  const requests = (): Promise<number> => unaryHandled(endpoint);
  return {
    url: `etcd://${endpoint.replace(/^https?:\/\//, '')}/bench`,
    options: { ttlSeconds: SESSION_TIMEOUT_MS / 1000 },
    batonRequests: requests,
    openFloor: async (n) => ({ floor: await etcdFloor(endpoint, `bench-scale-floor/${n}/`), requests }),
    counted: 'unary gRPC requests the server handled (/metrics); watch creates are stream messages, not counted',
    idleRequests: requests,
    heldFloor: etcdHeldFloor(endpoint, 'bench-held-floor'),
    serverPid: context.serverPid('etcd'),
    close: async () => undefined,
  };
}

/**
 * Transactions committed and rolled back in the database, less this reading's own: every heartbeat is
 * one. Backends report them when idle, at most once a second, so a window of many seconds is needed.
 */
async function transactions(admin: pg.Client): Promise<number> {
  const { rows } = await admin.query<{ n: string }>(
    'SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = current_database()',
  );
  return Number(rows[0]!.n);
}

async function postgresSetup(context: Context): Promise<Setup> {
  const url = await context.postgres();
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const withNamespace = new URL(url);
  withNamespace.searchParams.set('namespace', 'bench');
  return {
    url: withNamespace.toString(),
    options: { sessionTimeoutMs: SESSION_TIMEOUT_MS },
    batonRequests: async () => postgresCounters.statements,
    openFloor: async (n) => {
      const floor = await postgresFloor(url, `bench_scale_floor_${n}`);
      return { floor, requests: async () => floor.requests };
    },
    counted: "statements counted at the client (baton's request connections; heartbeats and LISTEN not counted)",
    idleRequests: () => transactions(admin),
    heldFloor: postgresHeldFloor(url, 'bench_held_floor'),
    // The postmaster's CPU is not the server's: every connection is a process of its own.
    serverPid: undefined,
    close: () => admin.end(),
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
    options: { sessionTimeoutMs: SESSION_TIMEOUT_MS },
    batonRequests: requests,
    openFloor: async (n) => ({ floor: await redisFloor(url, `bench-scale-floor:${n}`), requests }),
    counted: 'commands the server processed (INFO stats), heartbeats included',
    idleRequests: requests,
    heldFloor: redisHeldFloor(url, 'bench-held-floor'),
    serverPid: context.serverPid('redis'),
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
    process.stdout.write(`  N=${n}: baton ${describe(baton)}\n`);
    rows.push({ n, baton, floor: await floorOutcome(setup, n) });
    process.stdout.write(`  N=${n}: floor ${describe(rows.at(-1)!.floor)}\n`);
  }
  return rows;
}

/** The floor's run; a floor that cannot even open (a server still busy with baton's run) did not finish. */
async function floorOutcome(setup: Setup, n: number): Promise<QueueOutcome> {
  try {
    const { floor, requests } = await setup.openFloor(n);
    return await floorQueue(floor, n, requests);
  } catch (error) {
    return { n, didNotFinish: `opening: ${(error as Error).message}` };
  }
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

/** Idle windows: long enough for PostgreSQL's statistics and a few heartbeats of every session. */
const idleMs = (context: Context): number => (context.quick ? 12_000 : 25_000);

async function measureHeld(context: Context, label: string, setup: Setup): Promise<HeldOutcome[]> {
  const outcomes: HeldOutcome[] = [];
  for (const n of context.scaleN) {
    outcomes.push(
      await heldLocks(setup.url, setup.options, n, idleMs(context), () => setup.idleRequests(), setup.heldFloor),
    );
    process.stdout.write(`  ${n} locks held: ${outcomes.at(-1)!.didNotFinish ?? 'done'}\n`);
  }
  reportHeld(context, label, outcomes);
  return outcomes;
}

/** 100 and 1,000 sessions (the N up to 1,000). */
async function measureSessions(context: Context, label: string, setup: Setup): Promise<SessionsOutcome[]> {
  const outcomes: SessionsOutcome[] = [];
  for (const n of context.scaleN.filter((count) => count <= 1_000)) {
    const idle = () => setup.idleRequests();
    outcomes.push(await idleSessions(setup.url, {}, n, idleMs(context), idle, setup.serverPid));
    process.stdout.write(`  ${n} sessions: ${outcomes.at(-1)!.didNotFinish ?? 'done'}\n`);
  }
  reportSessions(context, label, outcomes);
  return outcomes;
}

export function scaleCase(name: string, label: string, open: (context: Context) => Promise<Setup>): Case {
  return {
    name,
    async run(context) {
      const setup = await open(context);
      try {
        heading(`${label} scale (1: N waiters on one lock, over ${WAITER_SESSIONS} sessions, a fifth holding)`);
        process.stdout.write(`requests: ${setup.counted}\n`);
        // The waiters last: at 10,000 they can take the server down (ZooKeeper did, in the recorded run).
        const parts = {
          held: () => measureHeld(context, label, setup),
          sessions: () => measureSessions(context, label, setup),
          waiters: async () => {
            const rows = await measure(setup, context.scaleN);
            printScaleTable(label, rows);
            reportScale(context, label, rows);
            return rows;
          },
        };
        const result: Record<string, unknown> = {};
        for (const [part, run] of Object.entries(parts)) {
          if (!context.scaleParts.has(part as keyof typeof parts)) continue;
          try {
            result[part] = await run();
          } catch (error) {
            const why = `${(error as Error).name}: ${(error as Error).message}`;
            context.report.holds(1, `${label} scale, ${part}`, false, `did not finish: ${why}`, 'finishes');
            result[part] = { didNotFinish: why };
          }
        }
        return result;
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

import type { Session } from '../recipes/contract.js';
import { MultiLock } from '../recipes/multilock.js';
import { FairMutex } from '../recipes/mutex.js';
import { Semaphore } from '../recipes/semaphore.js';
import { memoryStore } from '../src/backends/memory/store.js';
import { connect } from '../src/connect.js';
// The herd is counted on sessions opened with the testing connect, which wires the counters in.
import { connect as connectCounted, etcdCounters, etcdWatches, zkCounters } from '../src/testing.js';
import type { Case, Context } from './case.js';
import { sleep } from './clock.js';
import { fixed, times } from './report.js';
import { alternate, summarize, type Summary, timed } from './stats.js';
import { heading, printCases, printFigures } from './table.js';
import { untilWatches } from './zk-metrics.js';

const KINDS = {
  mutex: 'FairMutex acquire+release',
  semaphore: 'Semaphore (1 of 4) acquire+release',
  multi: 'MultiLock of 2 acquire+release',
  twoMutexes: 'two FairMutex acquired in sequence, released',
} as const;

/** Uncontended cycles of the Semaphore and the MultiLock beside the FairMutex's, in alternating blocks. */
async function cycles(url: string, size: Context['size']): Promise<Summary[]> {
  const session = await connect(url, { ttlSeconds: 10 });
  try {
    const mutex = new FairMutex(session, 'permits/mutex');
    const semaphore = new Semaphore(session, 'permits/semaphore', { permits: 4 });
    const multi = new MultiLock(session, ['permits/a', 'permits/b']);
    const [first, second] = [new FairMutex(session, 'permits/c'), new FairMutex(session, 'permits/d')];
    const samples = await alternate(
      {
        [KINDS.mutex]: timed(async () => (await mutex.acquire()).release()),
        [KINDS.semaphore]: timed(async () => (await semaphore.acquire()).release()),
        [KINDS.multi]: timed(async () => (await multi.acquire()).release()),
        [KINDS.twoMutexes]: timed(async () => {
          const [a, b] = [await first.acquire(), await second.acquire()];
          await Promise.all([a.release(), b.release()]);
        }),
      },
      size,
    );
    return Object.entries(samples).map(([name, values]) => summarize(name, values));
  } finally {
    await session.close();
  }
}

export const WAITERS = 50;
const PERMITS = 4;
/** How long after the last expected grant notifications are still counted: a herd would arrive by then. */
const SETTLE_MS = 300;

interface Probe {
  armed(): Promise<void>;
  notifications(): number;
}

/**
 * `WAITERS` waiters, each on a session of its own, queue for one permit behind a holder of all
 * `PERMITS`; the holder releases once, which lets the first `PERMITS` waiters in, and the notifications
 * that reach the waiters are counted until they hold and a moment longer.
 */
async function semaphoreHerd(url: string, probe: Probe): Promise<number> {
  const sessions: Session[] = [];
  try {
    for (let i = 0; i <= WAITERS; i += 1) sessions.push(await connectCounted(url, { ttlSeconds: 10 }));
    const [holderSession, ...waiterSessions] = sessions as [Session, ...Session[]];
    const holder = await new Semaphore(holderSession, 'permits/herd', { permits: PERMITS }).acquire({ count: PERMITS });
    let granted = 0;
    let drain!: () => void;
    const draining = new Promise<void>((resolve) => (drain = resolve));
    const waiters = waiterSessions.map(async (session) => {
      const permit = await new Semaphore(session, 'permits/herd', { permits: PERMITS }).acquire();
      granted += 1;
      await draining;
      await permit.release();
    });
    await probe.armed();
    const before = probe.notifications();
    await holder.release();
    while (granted < PERMITS) await sleep(1);
    await sleep(SETTLE_MS);
    const notifications = probe.notifications() - before;
    drain();
    await Promise.all(waiters);
    return notifications;
  } finally {
    await Promise.all(sessions.map((session) => session.close()));
  }
}

function report(context: Context, backend: string, results: readonly Summary[], herd: number): void {
  const find = (name: string): Summary => results.find((r) => r.name === name)!;
  heading(
    `8. Semaphore and MultiLock on ${backend}, uncontended, and one release of ${PERMITS} permits with ${WAITERS} waiting`,
  );
  printCases(results, { FairMutex: find(KINDS.mutex), 'two FairMutex': find(KINDS.twoMutexes) });
  printFigures('', { [`notifications to the waiters for one release of ${PERMITS} permits`]: String(herd) });
  const ratio = (a: string, b: string): number => find(a).medianMs / find(b).medianMs;
  context.report.atMost(
    8,
    `${backend} Semaphore cycle / FairMutex cycle`,
    ratio(KINDS.semaphore, KINDS.mutex),
    1.05,
    times,
  );
  context.report.info(
    8,
    `${backend} MultiLock of 2 / two FairMutex in sequence`,
    ratio(KINDS.multi, KINDS.twoMutexes),
    times(ratio(KINDS.multi, KINDS.twoMutexes)),
  );
  context.report.info(
    8,
    `${backend} Semaphore notifications, one release of ${PERMITS} (${WAITERS} waiting)`,
    herd,
    `${fixed(0)(herd)} for ${PERMITS} grants`,
  );
}

async function until(ready: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!ready()) {
    if (performance.now() > deadline) throw new Error(`permits herd: ${what} not reached after ${timeoutMs} ms`);
    await sleep(5);
  }
}

export const zkPermits: Case = {
  name: 'zk.permits',
  async run(context) {
    const hosts = await context.zk();
    const url = `zk://${hosts}/bench`;
    const results = await cycles(url, context.size);
    const herd = await semaphoreHerd(url, {
      armed: () => untilWatches(hosts, WAITERS),
      notifications: () => zkCounters.notifications,
    });
    report(context, 'ZK', results, herd);
    return { results, herd };
  },
};

export const etcdPermits: Case = {
  name: 'etcd.permits',
  async run(context) {
    const url = `etcd://${(await context.etcd()).replace(/^https?:\/\//, '')}/bench`;
    const results = await cycles(url, context.size);
    const herd = await semaphoreHerd(url, {
      armed: () => until(() => etcdWatches.size >= WAITERS, `${WAITERS} watches`),
      notifications: () => etcdCounters.notifications,
    });
    report(context, 'etcd', results, herd);
    return { results, herd };
  },
};

export const memoryPermits: Case = {
  name: 'memory.permits',
  async run(context) {
    const results = await cycles('memory://bench-permits/bench', {
      ...context.size,
      perBlock: context.size.perBlock * 10,
    });
    const store = memoryStore('bench-permits');
    const herd = await semaphoreHerd('memory://bench-permits/bench', {
      armed: () => until(() => store.watchedUnder('bench/permits/herd').length >= WAITERS, `${WAITERS} watches`),
      notifications: () => store.notificationsSent,
    });
    report(context, 'memory', results, herd);
    return { results, herd };
  },
};

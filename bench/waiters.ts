import { getEventListeners } from 'node:events';

import { FairMutex } from '../recipes/mutex.js';
import { memoryStore } from '../src/backends/memory/store.js';
import { connect, etcdWatches } from '../src/testing.js';
import { internalsOf } from '../test/harness/internals.js';
import type { Case, Context } from './case.js';
import { sleep } from './clock.js';
import { fixed } from './report.js';
import { heading, printFigures } from './table.js';
import { untilWatches } from './zk-metrics.js';

const WAITERS = 1_000;

interface Waiters {
  readonly heapBytesPerWaiter: number;
  /** Heap after every waiter had its turn, less the heap before they queued. */
  readonly heapBytesLeft: number;
  readonly listeners: { readonly before: number; readonly waiting: number; readonly after: number };
  readonly drainMs: number;
}

/** The heap in use once the garbage collector has run (the run needs `node --expose-gc`). */
export async function heapUsed(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('the waiters case needs node --expose-gc (npm run bench passes it)');
  // Twice, with a turn of the event loop between: finalizers and weak references settle in between.
  gc();
  await sleep(10);
  gc();
  return process.memoryUsage().heapUsed;
}

/**
 * `WAITERS` acquires queued in one process on one session behind a holder: the heap each waiter costs
 * while it waits, and what the session keeps for its waiters (a registration per waiter while it
 * waits, and any listener on the session's signal) before, during and after, when every waiter has
 * had its turn.
 */
async function measureWaiters(url: string, armed: () => Promise<void>): Promise<Waiters> {
  const session = await connect(url, { ttlSeconds: 10 });
  try {
    const mutex = new FairMutex(session, 'waiters');
    for (let i = 0; i < 50; i += 1) await (await mutex.acquire()).release(); // every path compiled and allocated once
    const holder = await mutex.acquire();
    const listeners = (): number =>
      getEventListeners(session.signal, 'abort').length + internalsOf(session).waitingCount;
    const before = { heap: await heapUsed(), listeners: listeners() };
    const turns = Array.from({ length: WAITERS }, async () => (await mutex.acquire()).release());
    await armed();
    const waiting = { heap: await heapUsed(), listeners: listeners() };
    const drainStarted = performance.now();
    await holder.release();
    await Promise.all(turns);
    const drainMs = performance.now() - drainStarted;
    turns.length = 0;
    const after = { heap: await heapUsed(), listeners: listeners() };
    return {
      heapBytesPerWaiter: (waiting.heap - before.heap) / WAITERS,
      heapBytesLeft: after.heap - before.heap,
      listeners: { before: before.listeners, waiting: waiting.listeners, after: after.listeners },
      drainMs,
    };
  } finally {
    await session.close();
  }
}

function reportWaiters(context: Context, backend: string, result: Waiters): Waiters {
  heading(`6. ${backend}: ${WAITERS} waiters queued in one process, on one session`);
  printFigures('', {
    'heap per waiting acquire': `${(result.heapBytesPerWaiter / 1024).toFixed(2)} KiB`,
    'heap left once all had their turn': `${(result.heapBytesLeft / 1024).toFixed(0)} KiB`,
    'waits registered with the session and listeners on its signal: before, waiting, after': `${result.listeners.before}, ${result.listeners.waiting}, ${result.listeners.after}`,
    [`all ${WAITERS} turns, one after another`]: `${result.drainMs.toFixed(0)} ms`,
  });
  context.report.info(
    6,
    `${backend} heap per queued waiter (${WAITERS} in one process)`,
    result.heapBytesPerWaiter,
    `${fixed(2)(result.heapBytesPerWaiter / 1024)} KiB (${(result.heapBytesLeft / 1024).toFixed(0)} KiB left after)`,
  );
  context.report.holds(
    6,
    `${backend} session registrations back to the baseline after ${WAITERS}`,
    result.listeners.after === result.listeners.before,
    `${result.listeners.before} -> ${result.listeners.waiting} -> ${result.listeners.after}`,
    `${result.listeners.before} after`,
  );
  return result;
}

/** Polls until `ready()` holds. */
async function until(ready: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!ready()) {
    if (performance.now() > deadline) throw new Error(`${WAITERS} waiters not armed after ${timeoutMs} ms`);
    await sleep(10);
  }
}

export const zkWaiters: Case = {
  name: 'zk.waiters',
  async run(context) {
    const hosts = await context.zk();
    return reportWaiters(
      context,
      'ZK',
      await measureWaiters(`zk://${hosts}/bench`, () => untilWatches(hosts, WAITERS, 60_000)),
    );
  },
};

export const etcdWaiters: Case = {
  name: 'etcd.waiters',
  async run(context) {
    const endpoint = (await context.etcd()).replace(/^https?:\/\//, '');
    return reportWaiters(
      context,
      'etcd',
      await measureWaiters(`etcd://${endpoint}/bench`, () => until(() => etcdWatches.size >= WAITERS)),
    );
  },
};

export const memoryWaiters: Case = {
  name: 'memory.waiters',
  async run(context) {
    const store = memoryStore('bench-waiters');
    return reportWaiters(
      context,
      'memory',
      await measureWaiters('memory://bench-waiters/bench', () =>
        until(() => store.watchedUnder('bench/waiters').length >= WAITERS),
      ),
    );
  },
};

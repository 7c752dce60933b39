import type { Session } from '../recipes/contract.js';
import { FairMutex } from '../recipes/mutex.js';
import { memoryStore } from '../src/backends/memory/store.js';
import { connect, etcdCounters, etcdWatches, zkCounters } from '../src/testing.js';
import type { Case, Context } from './case.js';
import { sleep } from './clock.js';
import { kazooHerd } from './kazoo-herd.js';
import { fixed } from './report.js';
import { heading, printFigures } from './table.js';
import { untilWatches, zkMetrics } from './zk-metrics.js';

export const HERD = 50;
/** How long after the first grant notifications are still counted: a herd would arrive by then. */
const SETTLE_MS = 300;

interface Herd {
  /** Watch notifications the waiters' process received for one release. */
  readonly notifications: number;
  /** Grants whose fencing token was not above the previous grant's (must be 0: FIFO). */
  readonly outOfOrder: number;
  /** Requests per handoff from the first release until all have held and released (if the probe counts them). */
  readonly requestsPerHandoff?: number | undefined;
}

interface Probe {
  /** Resolves once every waiter has its watch set. */
  armed(): Promise<void>;
  /** Notifications received so far by this process's sessions of the backend. */
  notifications(): number;
  /** Requests this process's sessions of the backend sent so far, where the backend counts them. */
  requests?(): Promise<number>;
}

/**
 * `HERD` waiters, each on a session of its own (as if in a process of its own), queue behind one
 * holder; the holder releases once, and the notifications that reach the waiters are counted until the
 * first waiter holds and a moment longer. Then they all take the lock in turn and leave.
 */
export async function batonHerd(url: string, probe: Probe): Promise<Herd> {
  const sessions: Session[] = [];
  try {
    for (let i = 0; i <= HERD; i += 1)
      sessions.push(await connect(url, url.startsWith('etcd:') ? { ttlSeconds: 10 } : { sessionTimeoutMs: 10_000 }));
    const [holderSession, ...waiterSessions] = sessions as [Session, ...Session[]];
    const holder = await new FairMutex(holderSession, 'herd').acquire();
    const tokens: bigint[] = [];
    let drain!: () => void;
    const draining = new Promise<void>((resolve) => (drain = resolve));
    const waiters = waiterSessions.map(async (session) => {
      const lock = await new FairMutex(session, 'herd').acquire();
      tokens.push(lock.fencingToken);
      await draining;
      await lock.release();
    });
    await probe.armed();
    const before = probe.notifications();
    const requestsBefore = await probe.requests?.();
    await holder.release();
    while (tokens.length === 0) await sleep(1);
    await sleep(SETTLE_MS);
    const notifications = probe.notifications() - before;
    drain();
    await Promise.all(waiters);
    const requests = requestsBefore === undefined ? undefined : ((await probe.requests!()) - requestsBefore) / HERD;
    const outOfOrder = tokens.filter((token, i) => i > 0 && token <= tokens[i - 1]!).length;
    return { notifications, outOfOrder, requestsPerHandoff: requests };
  } finally {
    await Promise.all(sessions.map((session) => session.close()));
  }
}

export function reportHerd(context: Context, backend: string, herd: Herd, extra: Record<string, string> = {}): void {
  heading(`3. Herd on ${backend}: ${HERD} queued waiters, one release`);
  printFigures(`${HERD} waiters, each on a session of its own, in one process:`, {
    'notifications to the waiters (client side)': String(herd.notifications),
    'grants out of queue order': String(herd.outOfOrder),
    ...(herd.requestsPerHandoff === undefined
      ? {}
      : { 'requests per handoff (first release to the last waiter gone)': herd.requestsPerHandoff.toFixed(2) }),
    ...extra,
  });
  context.report.exactly(
    3,
    `${backend} watch notifications per release (${HERD} waiting)`,
    herd.notifications,
    1,
    fixed(0),
    herd.outOfOrder === 0 ? '' : `(${herd.outOfOrder} grants out of order)`,
  );
  if (herd.requestsPerHandoff !== undefined)
    context.report.info(
      3,
      `${backend} requests per handoff (${HERD} waiting)`,
      herd.requestsPerHandoff,
      herd.requestsPerHandoff.toFixed(2),
    );
}

/** Polls until `ready()` holds. */
async function until(ready: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!ready()) {
    if (performance.now() > deadline) throw new Error(`herd: ${what} not reached after ${timeoutMs} ms`);
    await sleep(5);
  }
}

export const zkHerd: Case = {
  name: 'zk.herd',
  async run(context) {
    const hosts = await context.zk();
    const serverBefore = (await zkMetrics(hosts)).watchesFired;
    const herd = await batonHerd(`zk://${hosts}/bench`, {
      armed: () => untilWatches(hosts, HERD),
      notifications: () => zkCounters.notifications,
    });
    // The server's count takes in the whole run: every handoff, the waiters' turns too.
    const serverFired = (await zkMetrics(hosts)).watchesFired - serverBefore;
    const kazoo = await kazooHerd(hosts, HERD, SETTLE_MS);
    reportHerd(context, 'ZK', herd, {
      'watches the server fired per handoff, whole run': (serverFired / HERD).toFixed(2),
      "kazoo's Lock: watches the server fired for one release":
        kazoo === undefined ? 'kazoo not installed' : String(kazoo),
    });
    if (kazoo !== undefined)
      context.report.info(3, `kazoo's Lock watch notifications per release (${HERD} waiting)`, kazoo, String(kazoo));
    return { ...herd, serverFiredPerHandoff: serverFired / HERD, kazoo };
  },
};

export const etcdHerd: Case = {
  name: 'etcd.herd',
  async run(context) {
    const endpoint = await context.etcd();
    const herd = await batonHerd(`etcd://${endpoint.replace(/^https?:\/\//, '')}/bench`, {
      armed: () => until(() => etcdWatches.size >= HERD, `${HERD} watches`),
      notifications: () => etcdCounters.notifications,
    });
    reportHerd(context, 'etcd', herd);
    return herd;
  },
};

export const memoryHerd: Case = {
  name: 'memory.herd',
  async run(context) {
    const store = memoryStore('bench-herd');
    const herd = await batonHerd('memory://bench-herd/bench', {
      armed: () => until(() => store.watchedUnder('bench/herd').length >= HERD, `${HERD} watches`),
      notifications: () => store.notificationsSent,
    });
    reportHerd(context, 'memory', herd);
    return herd;
  },
};

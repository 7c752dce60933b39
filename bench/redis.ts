import { Redis } from 'ioredis';

import { FairMutex } from '../recipes/mutex.js';
import type { EnqueueScripts } from '../src/backends/redis/enqueue.js';
import { SCRIPTS } from '../src/backends/redis/scripts.js';
import { connect, redisCounters } from '../src/testing.js';
import type { Case } from './case.js';
import { sleep } from './clock.js';
import { nodeWorker } from './contended.js';
import { analyse, type ContenderReport, type Contention, medianRate } from './contention.js';
import { startAll, stopAll } from './line-process.js';
import { type PeerLock, peersInstalled, redisSemaphorePeer, redlockPeer } from './redis-peers.js';
import { fixed, times, timesRange } from './report.js';
import { alternateBlocks, flatBlocks, quantile, ratioInterval, summarize, type Summary, timed } from './stats.js';
import { heading, printCases, printFigures } from './table.js';

const COUNTED = 100;
const ITEM = 8;

export const REDIS_CASES = {
  floor: 'raw floor (enqueue script, release script)',
  floorCopy: "raw floor again (its copy: the run's noise)",
  setnx: 'SET NX PX + Lua compare-and-delete',
  mutex: 'baton FairMutex acquire+release',
  redlock: "redlock's lock()+unlock(), one instance",
  semaphore: "redis-semaphore's Mutex acquire+release",
} as const;

const COMPARE_AND_DELETE =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end";

type Scripted = Redis &
  EnqueueScripts & {
    batonRelease(q: string, session: string, id: string, channel: string, changes: string): Promise<number>;
    compareAndDelete(key: string, value: string): Promise<number>;
  };

/**
 * Counts the requests clients send while `during` runs, as the server sees them (MONITOR): commands a
 * script calls are not requests and are left out, and so are the counting's own and the sessions'
 * renewals (on their timer, whatever the number of cycles). A confirm of a hold on its timer would
 * count; the holds are too short for one.
 */
async function requestsDuring(url: string, during: () => Promise<unknown>): Promise<number> {
  const client = new Redis(url, { lazyConnect: true });
  // A monitoring connection of its own, its error listener on before it connects: ioredis takes a
  // line that arrives as it switches modes for a stray reply and reports it as an error.
  const monitor = client.duplicate({ monitor: true, lazyConnect: false });
  monitor.on('error', () => undefined);
  await new Promise((resolve) => monitor.once('monitoring', resolve));
  let count = 0;
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (source === 'lua' || /^(info|monitor|client|select|ping)$/i.test(args[0] ?? '')) return;
    if (/^pexpire$/i.test(args[0] ?? '')) return; // a session's renewal, on its timer
    count += 1;
  });
  try {
    await new Promise((resolve) => setTimeout(resolve, 20));
    await during();
    await new Promise((resolve) => setTimeout(resolve, 20));
    return count;
  } finally {
    monitor.disconnect();
    client.disconnect();
  }
}

/** The Redis uncontended cycle beside the raw floor (baton's two scripts on one connection), SET NX PX + Lua delete, and the polling libraries. */
export async function benchRedisCycle(
  url: string,
  options: { blocks: number; perBlock: number; warmup: number },
): Promise<{
  results: Summary[];
  requests: Record<string, number>;
  interval: [number, number];
  copy: [number, number];
}> {
  const client = new Redis(url) as Scripted;
  for (const [name, { numberOfKeys, lua }] of Object.entries(SCRIPTS))
    client.defineCommand(name, numberOfKeys === undefined ? { lua } : { numberOfKeys, lua });
  client.defineCommand('compareAndDelete', { numberOfKeys: 1, lua: COMPARE_AND_DELETE });
  const session = await connect(`${url}?namespace=bench`, { sessionTimeoutMs: 10_000 });
  const installed = peersInstalled();
  const peers: PeerLock[] = [];
  try {
    const floorSession = 'f100000000000000';
    let n = 0;
    const floorCycle = (lock: string) => async (): Promise<void> => {
      const base = `baton:{bench-raw/${lock}}`;
      const id = `${floorSession}-${(n += 1)}`;
      // As a session's first entry in a lock: the script sets the session's key there.
      await client.batonEnqueue(
        `${base}:q`,
        `${base}:c`,
        `${base}:s:${floorSession}`,
        base,
        id,
        'lock',
        '',
        '',
        3_600_000,
        '0',
      );
      await client.batonRelease(`${base}:q`, floorSession, id, `${base}:e:${id}`, `${base}:q`);
    };
    const mutex = new FairMutex(session, 'cycle');
    const contenders: Record<string, () => Promise<void>> = {
      [REDIS_CASES.floor]: floorCycle('floor'),
      [REDIS_CASES.floorCopy]: floorCycle('copy'),
      [REDIS_CASES.setnx]: async () => {
        const token = String((n += 1));
        if ((await client.set('bench-setnx', token, 'PX', 10_000, 'NX')) !== 'OK')
          throw new Error('SET NX found the key taken');
        await client.compareAndDelete('bench-setnx', token);
      },
      [REDIS_CASES.mutex]: async () => {
        const lock = await mutex.acquire();
        await lock.release();
      },
    };
    if (installed.redlock) {
      const peer = redlockPeer(url, 'bench-redlock');
      peers.push(peer);
      contenders[REDIS_CASES.redlock] = async () => (await peer.acquire())();
    }
    if (installed.redisSemaphore) {
      const peer = redisSemaphorePeer(url, 'bench-semaphore');
      peers.push(peer);
      contenders[REDIS_CASES.semaphore] = async () => (await peer.acquire())();
    }
    const byBlock = await alternateBlocks(
      Object.fromEntries(Object.entries(contenders).map(([name, cycle]) => [name, timed(cycle)])),
      options,
    );
    const samples = flatBlocks(byBlock);
    const requests: Record<string, number> = {};
    for (const [name, cycle] of Object.entries(contenders))
      requests[name] = (await requestsDuring(url, () => timed(cycle)(COUNTED))) / COUNTED;
    return {
      results: Object.entries(samples).map(([name, values]) => summarize(name, values)),
      requests,
      interval: ratioInterval(byBlock[REDIS_CASES.mutex]!, byBlock[REDIS_CASES.floor]!),
      copy: ratioInterval(byBlock[REDIS_CASES.floorCopy]!, byBlock[REDIS_CASES.floor]!),
    };
  } finally {
    await session.close();
    await Promise.all(peers.map((peer) => peer.close()));
    client.disconnect();
  }
}

export const redisCycle: Case = {
  name: 'redis.cycle',
  async run({ redis, size, report }) {
    const url = await redis();
    const { results, requests, interval, copy } = await benchRedisCycle(url, size);
    const find = (name: string): Summary | undefined => results.find((r) => r.name === name);
    heading(`${ITEM}. Redis uncontended cycle (standalone)`);
    printCases(results, {
      floor: find(REDIS_CASES.floor),
      'SET NX': find(REDIS_CASES.setnx),
      redlock: find(REDIS_CASES.redlock),
    });
    printFigures(
      "requests per cycle (the server's MONITOR; a script is one request):",
      Object.fromEntries(Object.entries(requests).map(([n, r]) => [n, r.toFixed(2)])),
    );
    const mutex = find(REDIS_CASES.mutex)!;
    const floor = find(REDIS_CASES.floor)!;
    report.info(
      ITEM,
      'Redis FairMutex cycle, median / p99',
      mutex.medianMs,
      `${mutex.medianMs.toFixed(3)} / ${mutex.p99Ms.toFixed(3)} ms, ${mutex.opsPerSec.toFixed(0)} ops/s`,
    );
    report.exactly(
      ITEM,
      'Redis requests per FairMutex cycle',
      Math.round(requests[REDIS_CASES.mutex]! * 100) / 100,
      2,
      fixed(2),
      `(SET NX + Lua delete ${fixed(2)(requests[REDIS_CASES.setnx]!)})`,
    );
    report.atMost(
      ITEM,
      'Redis FairMutex / raw floor (same two scripts)',
      mutex.medianMs / floor.medianMs,
      1.1,
      times,
      `(95% ${timesRange(interval)}; the floor's copy ${timesRange(copy)})`,
    );
    report.info(
      ITEM,
      'Redis FairMutex / SET NX PX + Lua delete',
      mutex.medianMs / find(REDIS_CASES.setnx)!.medianMs,
      times(mutex.medianMs / find(REDIS_CASES.setnx)!.medianMs),
    );
    const redlock = find(REDIS_CASES.redlock);
    if (redlock !== undefined)
      report.info(
        ITEM,
        "Redis FairMutex / redlock's lock (one instance)",
        mutex.medianMs / redlock.medianMs,
        times(mutex.medianMs / redlock.medianMs),
      );
    return { results, requests };
  },
};

const PROCESSES = 8;
const BLOCK_MS = 3_000;

/** 8 processes on one lock: baton (FIFO, woken by the release), and the polling libraries. */
export const redisContended: Case = {
  name: 'redis.contended',
  async run({ redis, quick, report }) {
    const url = await redis();
    const installed = peersInstalled();
    const kinds: Record<string, string> = { baton: `${url}?namespace=bench-contended` };
    if (installed.redlock) kinds['redlock (10 ms retry)'] = `redlock+${url}`;
    if (installed.redisSemaphore) kinds['redis-semaphore Mutex (10 ms retry)'] = `semaphore+${url}`;
    const rates: Record<string, string> = {};
    const measured: Record<string, Contention[]> = {};
    const perAcquisition: Record<string, number> = {};
    for (const [kind, target] of Object.entries(kinds)) {
      const workers = await startAll(
        (i) => nodeWorker('contender.js', [target, `contended-${kind.split(' ')[0]}`], `${kind} ${i}`),
        PROCESSES,
      );
      try {
        measured[kind] = [];
        const streaks: number[] = [];
        const shares: number[] = [];
        for (let block = 0; block < (quick ? 1 : 3); block += 1) {
          const answers = await Promise.all(workers.map((w) => w.ask(`contend ${BLOCK_MS}`)));
          const reports = answers.map((a) => JSON.parse(a) as ContenderReport);
          measured[kind].push(analyse(reports));
          const fairness = fairnessOf(reports);
          streaks.push(fairness.longestStreak);
          shares.push(fairness.smallestShare);
        }
        // Requests per acquisition, in a block of its own (MONITOR slows the server down).
        let counted: Contention | undefined;
        const requests = await requestsDuring(url, async () => {
          const answers = await Promise.all(workers.map((w) => w.ask(`contend ${BLOCK_MS / 3}`)));
          counted = analyse(answers.map((a) => JSON.parse(a) as ContenderReport));
        });
        perAcquisition[kind] = requests / Math.max(1, counted!.acquisitions);
        const all = measured[kind];
        const handoffs = all.flatMap((b) => b.handoffsMs);
        rates[kind] =
          `${medianRate(all).toFixed(0)} acquisitions/s, ${perAcquisition[kind].toFixed(1)} requests each, handoff median ${quantile(handoffs, 0.5).toFixed(2)} ms, p99 ${quantile(handoffs, 0.99).toFixed(2)} ms, overlaps ${all.reduce((s, b) => s + b.overlaps, 0)}; one process's longest run of grants ${Math.max(...streaks)}, the least-served process's share ${(Math.min(...shares) * 100).toFixed(1)}% (fair: ${(100 / PROCESSES).toFixed(1)}%)`;
      } finally {
        await stopAll(workers);
      }
      await sleep(200);
    }
    heading(`${ITEM}. Redis contended: ${PROCESSES} processes on one lock, released at once`);
    printFigures('', rates);
    const baton = medianRate(measured['baton']!);
    report.info(
      ITEM,
      `Redis FairMutex, ${PROCESSES} contending processes`,
      baton,
      `${baton.toFixed(0)} acquisitions/s`,
    );
    for (const kind of Object.keys(kinds).filter((k) => k !== 'baton')) {
      const rate = medianRate(measured[kind]!);
      report.info(
        ITEM,
        `Redis ${kind}, ${PROCESSES} processes`,
        rate,
        `${rate.toFixed(0)} acquisitions/s (baton ${times(baton / rate)})`,
      );
    }
    return { rates };
  },
};

/**
 * How fair a block was: the longest run of grants to one process in a row (a FIFO queue gives at most
 * 1 while others wait; a polling lock lets the releaser take it again), and the share of the grants the
 * least-served process got.
 */
function fairnessOf(reports: readonly ContenderReport[]): { longestStreak: number; smallestShare: number } {
  const grants = reports
    .flatMap((report, worker) => report.acquisitions.map(([granted]) => [granted, worker] as const))
    .sort((a, b) => a[0] - b[0]);
  let longestStreak = 0;
  let streak = 0;
  grants.forEach(([, worker], index) => {
    streak = index > 0 && grants[index - 1]![1] === worker ? streak + 1 : 1;
    longestStreak = Math.max(longestStreak, streak);
  });
  const smallest = Math.min(...reports.map((report) => report.acquisitions.length));
  return { longestStreak, smallestShare: grants.length === 0 ? 0 : smallest / grants.length };
}

const WAITERS = 50;

/** baton: two sessions, 50 waiters queued behind a holder, each releasing as soon as granted. */
async function batonHerd(url: string): Promise<{ perRelease: number; requests: number }> {
  const sessions = [
    await connect(`${url}?namespace=bench-herd`, { sessionTimeoutMs: 10_000 }),
    await connect(`${url}?namespace=bench-herd`, { sessionTimeoutMs: 10_000 }),
  ];
  try {
    const held = await new FairMutex(sessions[0]!, 'herd').acquire();
    const waiters = Array.from({ length: WAITERS }, (_, i) =>
      new FairMutex(sessions[i % 2]!, 'herd').withLock(() => undefined),
    );
    await sleep(500);
    const before = redisCounters.notifications;
    const requests = await requestsDuring(url, async () => {
      await held.release();
      await Promise.all(waiters);
    });
    return { perRelease: (redisCounters.notifications - before) / WAITERS, requests: requests / WAITERS };
  } finally {
    await Promise.all(sessions.map((s) => s.close()));
  }
}

/** A polling library: 50 waiters behind a holder, each releasing as soon as it has the lock. */
async function pollingHerd(url: string, make: () => PeerLock): Promise<number> {
  const locks = Array.from({ length: WAITERS + 1 }, make);
  try {
    const release = await locks[0]!.acquire();
    const waiting = locks.slice(1).map(async (lock) => (await lock.acquire())());
    await sleep(500);
    const requests = await requestsDuring(url, async () => {
      await release();
      await Promise.all(waiting);
    });
    return requests / WAITERS;
  } finally {
    await Promise.all(locks.map((lock) => lock.close()));
  }
}

/** Wake-ups per release with 50 waiters: baton's notifications, and the polling libraries' attempts. */
export const redisHerd: Case = {
  name: 'redis.herd',
  async run({ redis, report }) {
    const url = await redis();
    const figures: Record<string, string> = {};
    const baton = await batonHerd(url);
    figures['baton FairMutex'] =
      `${baton.perRelease.toFixed(2)} notifications per release, ${baton.requests.toFixed(2)} requests per handoff`;
    report.exactly(
      ITEM,
      `Redis notifications per release, ${WAITERS} waiters`,
      baton.perRelease,
      1,
      fixed(2),
      `(${baton.requests.toFixed(2)} requests per handoff)`,
    );
    const installed = peersInstalled();
    const peers: [string, () => PeerLock][] = [];
    if (installed.redlock) peers.push(['redlock (10 ms retry)', () => redlockPeer(url, 'herd-redlock')]);
    if (installed.redisSemaphore)
      peers.push(['redis-semaphore Mutex (10 ms retry)', () => redisSemaphorePeer(url, 'herd-semaphore')]);
    for (const [name, make] of peers) {
      const attempts = await pollingHerd(url, make);
      figures[name] = `${attempts.toFixed(1)} requests per handoff (every waiter tries again every 10 ms)`;
      report.info(ITEM, `Redis ${name}: requests per handoff, ${WAITERS} waiters`, attempts, attempts.toFixed(1));
    }
    heading(`${ITEM}. Redis: ${WAITERS} waiters, one release at a time`);
    printFigures('', figures);
    return figures;
  },
};

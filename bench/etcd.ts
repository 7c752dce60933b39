import { Etcd3 } from 'etcd3';

import { FairMutex } from '../recipes/mutex.js';
import { connect, etcdCounters } from '../src/testing.js';
import type { Case } from './case.js';
import { etcdRequestsDuring } from './etcd-metrics.js';
import { fixed, times, timesRange } from './report.js';
import { alternateBlocks, flatBlocks, ratioInterval, summarize, type Summary, timed } from './stats.js';
import { heading, printCases, printFigures } from './table.js';

/** Cycles per case whose requests are counted. */
const COUNTED = 100;

export const ETCD_CASES = {
  floor: 'raw floor (Txn put+range, delete)',
  floorDeadline: 'raw floor, each request with a deadline',
  floorCopy: "raw floor again (its copy: the run's noise)",
  mutex: 'baton FairMutex acquire+release',
  etcd3: "etcd3's lock() acquire+release",
} as const;

export interface EtcdCycleResult {
  readonly results: Summary[];
  /** Unary gRPC requests the server handled per cycle, by case (from its /metrics). */
  readonly rpcsPerCycle: Record<string, number>;
  /** Requests the session sent meanwhile to confirm its holds, on its timer: left out of the counts. */
  readonly confirmations: number;
  /** 95% intervals of ratios of medians (see `ratioInterval`): baton / floor, and the floor's copy / floor. */
  readonly intervals: { readonly mutex: [number, number]; readonly copy: [number, number] };
}

/** etcd uncontended acquire + release next to the raw one-Txn floor and to etcd3's own lock(). */
export async function benchEtcdCycle(
  endpoint: string,
  options: { blocks: number; perBlock: number; warmup: number },
): Promise<EtcdCycleResult> {
  const client = new Etcd3({ hosts: [endpoint] });
  const session = await connect(`etcd://${endpoint.replace(/^https?:\/\//, '')}/bench`, { ttlSeconds: 10 });
  try {
    const lease = await client.leaseClient.leaseGrant({ TTL: 3600, ID: 0 }); // outlives the run; revoked at the end
    const key = Buffer.from('bench-raw/#/floor-0-lock');
    const deadlineKey = Buffer.from('bench-raw/#/floor-1-lock');
    const copyKey = Buffer.from('bench-raw/#/floor-2-lock');
    const range = { key: Buffer.from('bench-raw/#/'), range_end: Buffer.from('bench-raw/#0'), keys_only: true };
    // With `deadline`, as baton sends every request: with a gRPC deadline, so that a member that stops
    // answering cannot hold a request forever (a third of the session's TTL).
    const floorCycle = async (floorKey: Buffer, deadline: boolean): Promise<void> => {
      await client.kv.txn(
        {
          compare: [{ key: floorKey, target: 'Create', result: 'Equal', create_revision: 0 }],
          success: [
            { request_put: { key: floorKey, value: Buffer.alloc(0), lease: lease.ID } },
            { request_range: range },
          ],
          failure: [{ request_range: range }],
        },
        deadline ? { deadline: Date.now() + 3_333 } : undefined,
      );
      await client.kv.deleteRange({ key: floorKey }, deadline ? { deadline: Date.now() + 3_333 } : undefined);
    };
    const mutex = new FairMutex(session, 'cycle');
    const contenders: Record<string, () => Promise<void>> = {
      [ETCD_CASES.floor]: () => floorCycle(key, false),
      // The same work on a key of its own: what separates two identical workloads in this run is the
      // run's noise, the yardstick for every other ratio of the case.
      [ETCD_CASES.floorCopy]: () => floorCycle(copyKey, false),
      [ETCD_CASES.floorDeadline]: () => floorCycle(deadlineKey, true),
      [ETCD_CASES.mutex]: async () => {
        const lock = await mutex.acquire();
        await lock.release();
      },
      [ETCD_CASES.etcd3]: async () => {
        const lock = await client.lock('bench-etcd3-lock').ttl(10).acquire();
        await lock.release();
      },
    };
    const blocks = Object.fromEntries(Object.entries(contenders).map(([name, cycle]) => [name, timed(cycle)]));
    const byBlock = await alternateBlocks(blocks, options);
    const samples = flatBlocks(byBlock);
    const intervals = {
      mutex: ratioInterval(byBlock[ETCD_CASES.mutex]!, byBlock[ETCD_CASES.floor]!),
      copy: ratioInterval(byBlock[ETCD_CASES.floorCopy]!, byBlock[ETCD_CASES.floor]!),
    };
    const rpcsPerCycle: Record<string, number> = {};
    // The session confirms what it holds every sixth of the TTL, a read per hold whatever the number of
    // cycles: counted apart (the ZooKeeper cases likewise leave out the sessions' heartbeats).
    let confirmations = 0;
    for (const [name, run] of Object.entries(contenders)) {
      const confirmedBefore = etcdCounters.confirmRequests;
      const rpcs = await etcdRequestsDuring(endpoint, () => timed(run)(COUNTED));
      const confirmed = etcdCounters.confirmRequests - confirmedBefore;
      confirmations += confirmed;
      rpcsPerCycle[name] = (rpcs - confirmed) / COUNTED;
    }
    await client.leaseClient.leaseRevoke({ ID: lease.ID });
    return {
      results: Object.entries(samples).map(([name, values]) => summarize(name, values)),
      rpcsPerCycle,
      confirmations,
      intervals,
    };
  } finally {
    await session.close();
    client.close();
  }
}

/** Item 4: the etcd cycle beside the raw one-Txn floor and etcd3's own lock(). */
export const etcdCycle: Case = {
  name: 'etcd.cycle',
  async run({ etcd, size, report, figures }) {
    const { results, rpcsPerCycle, confirmations, intervals } = await benchEtcdCycle(await etcd(), size);
    const find = (name: string): Summary => results.find((r) => r.name === name)!;
    for (const result of results) figures.set(`etcd ${result.name}`, result);
    heading('4. etcd uncontended cycle (standalone)');
    printCases(results, { floor: find(ETCD_CASES.floor), 'etcd3 lock': find(ETCD_CASES.etcd3) });
    printFigures(
      `unary gRPC requests per cycle (server /metrics; ${confirmations} timed confirmations of holds left out):`,
      Object.fromEntries(Object.entries(rpcsPerCycle).map(([n, r]) => [n, r.toFixed(2)])),
    );
    const mutex = find(ETCD_CASES.mutex);
    report.info(
      4,
      'etcd FairMutex cycle, median / p99',
      mutex.medianMs,
      `${mutex.medianMs.toFixed(3)} / ${mutex.p99Ms.toFixed(3)} ms, ${mutex.opsPerSec.toFixed(0)} ops/s`,
    );
    report.exactly(
      4,
      'etcd RPCs per FairMutex cycle',
      rpcsPerCycle[ETCD_CASES.mutex]!,
      2,
      fixed(2),
      `(floor ${fixed(2)(rpcsPerCycle[ETCD_CASES.floor]!)}, etcd3 lock() ${fixed(2)(rpcsPerCycle[ETCD_CASES.etcd3]!)})`,
    );
    const withDeadlines = mutex.medianMs / find(ETCD_CASES.floorDeadline).medianMs;
    const floorMs = find(ETCD_CASES.floor).medianMs;
    const copy = find(ETCD_CASES.floorCopy).medianMs / floorMs;
    report.atMost(
      4,
      'etcd FairMutex / raw one-Txn floor',
      mutex.medianMs / floorMs,
      1.05,
      times,
      `(95% ${timesRange(intervals.mutex)}; ${times(withDeadlines)} the floor with deadlines)`,
    );
    report.info(
      4,
      "etcd the floor's identical copy / the floor",
      copy,
      `${times(copy)} (95% ${timesRange(intervals.copy)}: this run's noise)`,
    );
    report.atMost(4, "etcd FairMutex / etcd3's lock()", mutex.medianMs / find(ETCD_CASES.etcd3).medianMs, 0.7, times);
    return { results, rpcsPerCycle, confirmations };
  },
};

import { Etcd3 } from 'etcd3';
import zookeeper from 'node-zookeeper-client';

import type { Session } from '../recipes/contract.js';
import { FairMutex } from '../recipes/mutex.js';
import { create, getChildren, remove } from '../src/backends/zookeeper/client.js';
import { corked } from '../src/backends/zookeeper/client/pipeline.js';
import { mkdirp } from '../src/backends/zookeeper/mkdirp.js';
import { connect } from '../src/connect.js';
import type { Case, Context } from './case.js';
import { cpuMs } from './cpu.js';
import { FLOOR_NODE } from './floor-name.js';
import { times, timesRange } from './report.js';
import { balancedRound, pairedRange, quantile, wholePeriods } from './stats.js';
import { heading, ms } from './table.js';
import { openClient } from './zk-client.js';

const LOCKS = 64;
const EPHEMERAL_SEQUENTIAL = zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL;

/** One cycle of loop `i`; every loop runs on the same connection. */
type Cycle = (i: number) => Promise<void>;

interface Throughput {
  readonly name: string;
  /** Cycles per second of each block, all loops together. */
  readonly perSecond: number[];
  /** Every cycle's milliseconds. */
  readonly samples: number[];
  /** CPU time of this process and of the server, over every block. */
  clientCpuMs: number;
  serverCpuMs: number;
  cycles: number;
}

/** `LOCKS` loops at once, each running `perLoop` cycles; the block's throughput and every cycle's time. */
async function block(cycle: Cycle, perLoop: number, into: Throughput, serverPid: number | undefined): Promise<void> {
  const started = performance.now();
  const cpuBefore = [process.cpuUsage(), cpuMs([serverPid])] as const;
  await Promise.all(
    Array.from({ length: LOCKS }, async (_, i) => {
      for (let k = 0; k < perLoop; k += 1) {
        const cycleStarted = performance.now();
        await cycle(i);
        into.samples.push(performance.now() - cycleStarted);
      }
    }),
  );
  into.perSecond.push(((LOCKS * perLoop) / (performance.now() - started)) * 1000);
  const client = process.cpuUsage(cpuBefore[0]);
  into.clientCpuMs += (client.user + client.system) / 1000;
  into.serverCpuMs += cpuMs([serverPid]) - cpuBefore[1];
  into.cycles += LOCKS * perLoop;
}

/**
 * The kinds in alternating blocks (after a warm-up block each, `warmup` cycles over all the locks: see
 * `WARMUP_CYCLES` in run.ts), in whole periods of the balanced order (`wholePeriods`), with about as many
 * cycles in all (more or fewer per block).
 */
async function alternateBlocks(
  kinds: Record<string, Cycle>,
  serverPid: number | undefined,
  warmup: number,
  blocks: number,
  perLoop: number,
): Promise<Throughput[]> {
  const fresh = (name: string): Throughput => ({
    name,
    perSecond: [],
    samples: [],
    clientCpuMs: 0,
    serverCpuMs: 0,
    cycles: 0,
  });
  const results = Object.keys(kinds).map(fresh);
  for (const cycle of Object.values(kinds)) await block(cycle, Math.ceil(warmup / LOCKS), fresh('warm-up'), serverPid);
  const rounds = wholePeriods(blocks, results.length);
  const cycles = Math.max(1, Math.round((blocks * perLoop) / rounds));
  for (let b = 0; b < rounds; b += 1) {
    for (const [index, cycle] of balancedRound([...Object.values(kinds).entries()], b))
      await block(cycle, cycles, results[index]!, serverPid);
  }
  return results;
}

function batonLoops(session: Session): Cycle {
  const locks = Array.from({ length: LOCKS }, (_, i) => new FairMutex(session, `scale-${i}`));
  return async (i) => (await locks[i]!.acquire()).release();
}

function printScale(title: string, results: readonly Throughput[]): void {
  heading(title);
  const floors = results.slice(1);
  const columns = ['cycles/s', 'median', 'p99', 'client cpu', 'server cpu', ...floors.map((_, i) => `/floor ${i + 1}`)];
  process.stdout.write(`${'case (cpu: per cycle)'.padEnd(60)}${columns.map((c) => c.padStart(11)).join('')}\n`);
  for (const result of results) {
    const cells = [
      rate(result).toFixed(0),
      ms(quantile(result.samples, 0.5)),
      ms(quantile(result.samples, 0.99)),
      ms(result.clientCpuMs / result.cycles),
      ms(result.serverCpuMs / result.cycles),
      ...floors.map((floor) => `${(rate(result) / rate(floor)).toFixed(3)}x`),
    ];
    process.stdout.write(`${result.name.padEnd(60)}${cells.map((c) => c.padStart(11)).join('')}\n`);
  }
}

/** Median of the blocks' throughputs. */
function rate(result: Throughput): number {
  return quantile(result.perSecond, 0.5);
}

function reportScale(context: Context, backend: string, results: readonly Throughput[]): unknown {
  const [ours, createDelete, lockOps, withDeadlines] = results as [
    Throughput,
    Throughput,
    Throughput,
    Throughput | undefined,
  ];
  const deadlines =
    withDeadlines === undefined ? '' : `, ${times(rate(ours) / rate(withDeadlines))} them with deadlines`;
  context.report.atLeast(
    6,
    `${backend} ${LOCKS} locks at once / raw create+delete, one connection`,
    rate(ours) / rate(createDelete),
    0.8,
    times,
    `(${rate(ours).toFixed(0)} vs ${rate(createDelete).toFixed(0)} cycles/s, blocks ${timesRange(pairedRange(ours.perSecond, createDelete.perSecond))}; ${times(rate(ours) / rate(lockOps))} the lock's own requests${deadlines})`,
  );
  return results.map((r) => ({
    name: r.name,
    perSecond: r.perSecond,
    medianMs: quantile(r.samples, 0.5),
    p99Ms: quantile(r.samples, 0.99),
    clientCpuMsPerCycle: r.clientCpuMs / r.cycles,
    serverCpuMsPerCycle: r.serverCpuMs / r.cycles,
  }));
}

/** Blocks and cycles per loop per block: about a second a block (etcd's writes are slower here). */
const size = (quick: boolean, backend: 'zk' | 'etcd'): [blocks: number, perLoop: number] => {
  const perLoop = backend === 'zk' ? 20 : 8;
  return quick ? [3, perLoop / 2] : [7, perLoop];
};

export const zkParallel: Case = {
  name: 'zk.parallel',
  async run(context) {
    const hosts = await context.zk();
    const client = await openClient(hosts);
    const session = await connect(`zk://${hosts}/bench`);
    try {
      for (let i = 0; i < LOCKS; i += 1) {
        await mkdirp(client, `/bench-scale/cd/${i}`);
        await mkdirp(client, `/bench-scale/lock/${i}`);
      }
      const results = await alternateBlocks(
        {
          [`baton: ${LOCKS} FairMutexes on one session`]: batonLoops(session),
          'floor 1: raw create, delete': async (i) =>
            remove(client, await create(client, `/bench-scale/cd/${i}/${FLOOR_NODE}`, EPHEMERAL_SEQUENTIAL)),
          "floor 2: raw create+getChildren, delete (a lock's requests)": async (i) => {
            const dir = `/bench-scale/lock/${i}`;
            const [path] = await Promise.all(
              corked(client, () => [
                create(client, `${dir}/${FLOOR_NODE}`, EPHEMERAL_SEQUENTIAL),
                getChildren(client, dir),
              ]),
            );
            await remove(client, path);
          },
        },
        context.serverPid('zk'),
        context.size.warmup,
        ...size(context.quick, 'zk'),
      );
      printScale(`6. ZooKeeper scale: ${LOCKS} independent locks cycling at once on one connection`, results);
      return reportScale(context, 'ZK', results);
    } finally {
      await session.close();
      client.close();
    }
  },
};

export const etcdParallel: Case = {
  name: 'etcd.parallel',
  async run(context) {
    const endpoint = await context.etcd();
    const client = new Etcd3({ hosts: [endpoint] });
    const session = await connect(`etcd://${endpoint.replace(/^https?:\/\//, '')}/bench`, { ttlSeconds: 10 });
    try {
      const lease = await client.leaseClient.leaseGrant({ TTL: 3600, ID: 0 });
      const key = (kind: string, i: number): Buffer => Buffer.from(`bench-scale/${kind}/${i}/#/entry`);
      const txnCycle = async (i: number, kind: string, options?: { deadline: number }): Promise<void> => {
        const own = key(kind, i);
        const range = {
          key: Buffer.from(`bench-scale/${kind}/${i}/#/`),
          range_end: Buffer.from(`bench-scale/${kind}/${i}/#0`),
          keys_only: true,
        };
        await client.kv.txn(
          {
            compare: [{ key: own, target: 'Create', result: 'Equal', create_revision: 0 }],
            success: [{ request_put: { key: own, value: Buffer.alloc(0), lease: lease.ID } }, { request_range: range }],
            failure: [{ request_range: range }],
          },
          options,
        );
        await client.kv.deleteRange({ key: own }, options);
      };
      const results = await alternateBlocks(
        {
          [`baton: ${LOCKS} FairMutexes on one session`]: batonLoops(session),
          'floor 1: raw put, delete': async (i) => {
            await client.kv.put({ key: key('cd', i), value: Buffer.alloc(0), lease: lease.ID });
            await client.kv.deleteRange({ key: key('cd', i) });
          },
          "floor 2: raw Txn put+range, delete (a lock's requests)": (i) => txnCycle(i, 'lock'),
          // baton gives every attempt a deadline (a member that stops answering must not hold a
          // release for minutes); gRPC then keeps a timer per call. The same floor with one:
          'floor 3: floor 2, each request with a deadline, as baton sends them': (i) =>
            txnCycle(i, 'deadline', { deadline: Date.now() + 3_333 }),
        },
        context.serverPid('etcd'),
        context.size.warmup,
        ...size(context.quick, 'etcd'),
      );
      await client.leaseClient.leaseRevoke({ ID: lease.ID });
      printScale(`6. etcd scale: ${LOCKS} independent locks cycling at once on one connection`, results);
      return reportScale(context, 'etcd', results);
    } finally {
      await session.close();
      client.close();
    }
  },
};

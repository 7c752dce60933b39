import zookeeper from 'node-zookeeper-client';

import type { Lock } from '../recipes/mutex.js';
import { FairMutex } from '../recipes/mutex.js';
import { ReadWriteLock } from '../recipes/rw-lock.js';
import { create, getChildren, remove, type ZkClient } from '../src/backends/zookeeper/client.js';
import { corked } from '../src/backends/zookeeper/client/pipeline.js';
import { mkdirp } from '../src/backends/zookeeper/mkdirp.js';
import { connect } from '../src/connect.js';
import type { Case } from './case.js';
import { FLOOR_NODE } from './floor-name.js';
import { KAZOO_MISSING, KazooPeer } from './kazoo.js';
import { fixed, times } from './report.js';
import { alternate, type Block, summarize, type Summary, timed } from './stats.js';
import { heading, printCases, printFigures } from './table.js';
import { openClient } from './zk-client.js';
import { zkRequestsDuring } from './zk-metrics.js';

const EPHEMERAL_SEQUENTIAL = zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL;

/** The least a queue lock needs, awaited one by one: create, list, delete. */
async function rawAwaited(client: ZkClient, dir: string): Promise<void> {
  const path = await create(client, `${dir}/${FLOOR_NODE}`, EPHEMERAL_SEQUENTIAL);
  await getChildren(client, dir);
  await remove(client, path);
}

/** The same with the create and the listing pipelined on the connection, each in its own write. */
async function rawPipelined(client: ZkClient, dir: string): Promise<void> {
  const [path] = await Promise.all([
    create(client, `${dir}/${FLOOR_NODE}`, EPHEMERAL_SEQUENTIAL),
    getChildren(client, dir),
  ]);
  await remove(client, path);
}

/** The pipelined floor with both requests in one socket write, as baton sends them. */
async function rawOneWrite(client: ZkClient, dir: string): Promise<void> {
  const [path] = await Promise.all(
    corked(client, () => [create(client, `${dir}/${FLOOR_NODE}`, EPHEMERAL_SEQUENTIAL), getChildren(client, dir)]),
  );
  await remove(client, path);
}

export interface ZkCycleResult {
  readonly results: Summary[];
  /** Requests the server received per cycle, by case (from its `mntr` packet counter). */
  readonly requestsPerCycle: Record<string, number>;
}

/** Cycles per case whose server requests are counted: enough that a heartbeat falling in is noise. */
const COUNTED = 200;

/** ZooKeeper uncontended cycles: baton's recipes beside the raw floor and kazoo's, in one run. */
export async function benchZkCycle(
  connectString: string,
  options: { blocks: number; perBlock: number; warmup: number },
): Promise<ZkCycleResult> {
  const client = await openClient(connectString);
  const session = await connect(`zk://${connectString}/bench`);
  const kazoo = await KazooPeer.start(connectString);
  try {
    await mkdirp(client, '/bench-raw/awaited');
    await mkdirp(client, '/bench-raw/pipelined');
    await mkdirp(client, '/bench-raw/one-write');
    const mutex = new FairMutex(session, 'cycle');
    const rw = new ReadWriteLock(session, 'rw-cycle');
    const cycle = (lock: Lock) => timed(async () => (await lock.acquire()).release());
    const contenders: Record<string, Block> = {
      [CASES.awaited]: timed(() => rawAwaited(client, '/bench-raw/awaited')),
      [CASES.pipelined]: timed(() => rawPipelined(client, '/bench-raw/pipelined')),
      [CASES.oneWrite]: timed(() => rawOneWrite(client, '/bench-raw/one-write')),
      [CASES.mutex]: cycle(mutex),
      [CASES.read]: cycle(rw.readLock),
      [CASES.write]: cycle(rw.writeLock),
    };
    if (kazoo !== undefined) {
      contenders[CASES.kazooLock] = (count) => kazoo.cycles('lock', count);
      contenders[CASES.kazooRead] = (count) => kazoo.cycles('read', count);
      contenders[CASES.kazooWrite] = (count) => kazoo.cycles('write', count);
    } else {
      process.stdout.write(`${KAZOO_MISSING}\n`);
    }
    const samples = await alternate(contenders, options);
    const requestsPerCycle: Record<string, number> = {};
    for (const [name, run] of Object.entries(contenders)) {
      requestsPerCycle[name] = (await zkRequestsDuring(connectString, () => run(COUNTED))) / COUNTED;
    }
    return { results: Object.entries(samples).map(([name, values]) => summarize(name, values)), requestsPerCycle };
  } finally {
    await kazoo?.stop();
    await session.close();
    client.close();
  }
}
export const CASES = {
  awaited: 'raw floor, awaited (create, getChildren, delete)',
  pipelined: 'raw floor, pipelined (create+getChildren, delete)',
  oneWrite: 'raw floor, pipelined in one socket write',
  mutex: 'baton FairMutex acquire+release',
  read: 'baton readLock acquire+release',
  write: 'baton writeLock acquire+release',
  kazooLock: 'kazoo Lock acquire+release',
  kazooRead: 'kazoo ReadLock acquire+release',
  kazooWrite: 'kazoo WriteLock acquire+release',
} as const;

/** Items 1 and 5: the uncontended cycle of each recipe beside the raw floor and kazoo. */
export const zkCycle: Case = {
  name: 'zk.cycle',
  async run({ zk, size, report, figures }) {
    const { results, requestsPerCycle } = await benchZkCycle(await zk(), size);
    const find = (name: string): Summary | undefined => results.find((r) => r.name === name);
    for (const result of results) figures.set(`zk ${result.name}`, result);
    heading('1, 5. ZooKeeper uncontended cycle (standalone, forceSync on)');
    printCases(results, {
      awaited: find(CASES.awaited),
      pipelined: find(CASES.pipelined),
      'one write': find(CASES.oneWrite),
      'kazoo Lock': find(CASES.kazooLock),
    });
    printFigures(
      'server requests per cycle (mntr zk_packets_received):',
      Object.fromEntries(Object.entries(requestsPerCycle).map(([n, r]) => [n, r.toFixed(2)])),
    );
    const ratio = (a: string, b: string): number | undefined => {
      const [x, y] = [find(a), find(b)];
      return x === undefined || y === undefined ? undefined : x.medianMs / y.medianMs;
    };
    const mutex = find(CASES.mutex)!;
    report.info(
      1,
      'ZK FairMutex cycle, median / p99',
      mutex.medianMs,
      `${mutex.medianMs.toFixed(3)} / ${mutex.p99Ms.toFixed(3)} ms, ${mutex.opsPerSec.toFixed(0)} ops/s`,
    );
    report.atMost(
      1,
      'ZK FairMutex / raw floor pipelined',
      ratio(CASES.mutex, CASES.pipelined)!,
      1.05,
      times,
      `(awaited floor ${times(ratio(CASES.mutex, CASES.awaited)!)})`,
    );
    const kazooLock = ratio(CASES.mutex, CASES.kazooLock);
    if (kazooLock !== undefined) report.atMost(1, "ZK FairMutex / kazoo's Lock", kazooLock, 0.6, times);
    const requests = (name: string): string =>
      requestsPerCycle[name] === undefined ? '-' : requestsPerCycle[name].toFixed(2);
    report.info(
      1,
      'ZK server requests per cycle',
      requestsPerCycle[CASES.mutex]!,
      `baton ${requests(CASES.mutex)}, floor ${requests(CASES.pipelined)}, kazoo ${requests(CASES.kazooLock)}`,
    );
    for (const [half, ours, theirs] of [
      ['readLock', CASES.read, CASES.kazooRead],
      ['writeLock', CASES.write, CASES.kazooWrite],
    ] as const) {
      const vsKazoo = ratio(ours, theirs);
      const vsMutex = ratio(ours, CASES.mutex)!;
      report.info(
        5,
        `ZK ${half} / kazoo's ${half === 'readLock' ? 'ReadLock' : 'WriteLock'}`,
        vsKazoo ?? Number.NaN,
        `${vsKazoo === undefined ? 'no kazoo' : times(vsKazoo)} (${times(vsMutex)} the FairMutex, ${fixed(3, ' ms')(find(ours)!.medianMs)})`,
      );
    }
    return { results, requestsPerCycle };
  },
};

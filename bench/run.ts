import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { ensureServersInstalled } from '../test/harness/install.js';
import { startEtcd } from '../test/harness/etcd.js';
import { startZooKeeper } from '../test/harness/zookeeper.js';
import { benchEtcdCycle, type EtcdCycleResult } from './etcd.js';
import type { Summary } from './stats.js';
import { benchZkCycle, CASES } from './zookeeper.js';

/**
 * `npm run bench [-- --json results.json] [-- --quick] [-- --only zk|etcd]`: starts its own standalone ZooKeeper (forceSync
 * on) and etcd, or uses BATON_BENCH_ZK=host:port and BATON_BENCH_ETCD=http://host:port, and prints
 * every figure next to the raw floor measured in the same run, as ratios.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const jsonAt = args.indexOf('--json');
  const size = args.includes('--quick') ? { blocks: 4, perBlock: 100 } : { blocks: 10, perBlock: 300 };
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
  const stops: (() => Promise<void>)[] = [];
  const results: Record<string, unknown> = { machine: machine() };
  try {
    if (only === undefined || only === 'zk') results['zookeeperCycle'] = await benchZk(await zkServer(stops), size);
    if (only === undefined || only === 'etcd') results['etcdCycle'] = await benchEtcd(await etcdServer(stops), size);
    if (jsonAt >= 0) {
      const file = args[jsonAt + 1] ?? 'results.json';
      writeFileSync(file, JSON.stringify(results, null, 2));
      process.stdout.write(`\nwrote ${file}\n`);
    }
  } finally {
    for (const stop of stops) await stop();
  }
}

type Size = { blocks: number; perBlock: number };

/** BATON_BENCH_ZK, or a standalone ZooKeeper with forceSync on, stopped at the end. */
async function zkServer(stops: (() => Promise<void>)[]): Promise<string> {
  const external = process.env['BATON_BENCH_ZK'];
  if (external !== undefined) return external;
  await ensureServersInstalled();
  const server = await startZooKeeper({ size: 1, tickTimeMs: 2000, forceSync: true });
  stops.push(() => server.stop());
  return server.connectString;
}

/** BATON_BENCH_ETCD, or a standalone etcd, stopped at the end. */
async function etcdServer(stops: (() => Promise<void>)[]): Promise<string> {
  const external = process.env['BATON_BENCH_ETCD'];
  if (external !== undefined) return external;
  await ensureServersInstalled();
  const server = await startEtcd({ size: 1 });
  stops.push(() => server.stop());
  return server.endpoints[0]!;
}

async function benchZk(zk: string, size: Size): Promise<Summary[]> {
  const zkResults = await benchZkCycle(zk, size);
  const zkCase = (name: string): Summary | undefined => zkResults.find((r) => r.name === name);
  print('ZooKeeper uncontended cycle (standalone, forceSync on)', zkResults, { awaited: zkCase(CASES.awaited)!, pipelined: zkCase(CASES.pipelined)!, 'one write': zkCase(CASES.oneWrite)! });
  compare([
    [CASES.read, CASES.mutex],
    [CASES.write, CASES.mutex],
    [CASES.mutex, CASES.kazooLock],
    [CASES.read, CASES.kazooRead],
    [CASES.write, CASES.kazooWrite],
  ].map(([a, b]) => [zkCase(a!), zkCase(b!)]));
  return zkResults;
}

async function benchEtcd(etcd: string, size: Size): Promise<EtcdCycleResult> {
  const etcdResults = await benchEtcdCycle(etcd, size);
  const etcdCase = (prefix: string): Summary => etcdResults.results.find((r) => r.name.startsWith(prefix))!;
  print('etcd uncontended cycle (standalone)', etcdResults.results, { floor: etcdCase('raw floor (Txn'), 'etcd3 lock': etcdCase("etcd3's lock") });
  process.stdout.write('unary gRPC requests per cycle (server /metrics):\n');
  for (const [name, rpcs] of Object.entries(etcdResults.rpcsPerCycle)) process.stdout.write(`  ${name.padEnd(50)} ${rpcs.toFixed(2)}\n`);
  return etcdResults;
}

/** Ratios of medians between named pairs (a pair with a missing side, e.g. no kazoo, is skipped). */
function compare(pairs: [Summary | undefined, Summary | undefined][]): void {
  for (const [a, b] of pairs) {
    if (a === undefined || b === undefined) continue;
    process.stdout.write(`  ${a.name.padEnd(34)} / ${b.name.padEnd(34)} ${(a.medianMs / b.medianMs).toFixed(3)}x\n`);
  }
}

/** Medians side by side, with each case's ratio to every reference measured in the same run. */
function print(title: string, results: readonly Summary[], references: Record<string, Summary>): void {
  process.stdout.write(`\n${title}  [${machine()}]\n`);
  const names = Object.keys(references);
  process.stdout.write(`${'case'.padEnd(52)} ${'median'.padStart(9)} ${'p99'.padStart(9)} ${'ops/s'.padStart(8)}${names.map((n) => ` ${`/${n}`.padStart(12)}`).join('')}\n`);
  for (const result of results) {
    const ratios = Object.values(references).map((ref) => ` ${`${(result.medianMs / ref.medianMs).toFixed(3)}x`.padStart(12)}`);
    process.stdout.write(
      `${result.name.padEnd(52)} ${result.medianMs.toFixed(3).padStart(7)}ms ${result.p99Ms.toFixed(3).padStart(7)}ms ${result.opsPerSec.toFixed(0).padStart(8)}${ratios.join('')}\n`,
    );
  }
}

function machine(): string {
  return `${os.cpus().length} cpu ${os.cpus()[0]?.model ?? ''}, node ${process.version}`.replace(/\s+/g, ' ');
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

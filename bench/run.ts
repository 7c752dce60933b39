import { writeFileSync } from 'node:fs';
import os from 'node:os';
import { ensureServersInstalled } from '../test/harness/install.js';
import { startZooKeeper } from '../test/harness/zookeeper.js';
import type { Summary } from './stats.js';
import { benchZkCycle } from './zookeeper.js';

/**
 * `npm run bench [-- --json results.json] [-- --quick]`: starts its own standalone ZooKeeper with
 * forceSync on (or uses BATON_BENCH_ZK=host:port) and prints every figure next to the raw floor
 * measured in the same run, as ratios.
 */
async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const jsonAt = args.indexOf('--json');
  const quick = args.includes('--quick');
  const external = process.env['BATON_BENCH_ZK'];
  let stop = async (): Promise<void> => undefined;
  let connectString = external ?? '';
  if (!external) {
    await ensureServersInstalled();
    const zk = await startZooKeeper({ size: 1, tickTimeMs: 2000, forceSync: true });
    connectString = zk.connectString;
    stop = () => zk.stop();
  }
  try {
    const results = await benchZkCycle(connectString, quick ? { blocks: 4, perBlock: 100 } : { blocks: 10, perBlock: 300 });
    print('ZooKeeper uncontended cycle (standalone, forceSync on)', results, { awaited: results[0]!, pipelined: results[1]! });
    if (jsonAt >= 0) {
      const file = args[jsonAt + 1] ?? 'results.json';
      writeFileSync(file, JSON.stringify({ machine: machine(), zookeeperCycle: results }, null, 2));
      process.stdout.write(`\nwrote ${file}\n`);
    }
  } finally {
    await stop();
  }
}

/** Medians side by side, with each case's ratio to both raw floors measured in the same run. */
function print(title: string, results: readonly Summary[], floors: { awaited: Summary; pipelined: Summary }): void {
  process.stdout.write(`\n${title}  [${machine()}]\n`);
  process.stdout.write(
    `${'case'.padEnd(52)} ${'median'.padStart(9)} ${'p99'.padStart(9)} ${'ops/s'.padStart(8)} ${'/awaited'.padStart(9)} ${'/pipelined'.padStart(11)}\n`,
  );
  for (const result of results) {
    const ratio = (floor: Summary): string => `${(result.medianMs / floor.medianMs).toFixed(3)}x`;
    process.stdout.write(
      `${result.name.padEnd(52)} ${result.medianMs.toFixed(3).padStart(7)}ms ${result.p99Ms.toFixed(3).padStart(7)}ms ${result.opsPerSec.toFixed(0).padStart(8)} ${ratio(floors.awaited).padStart(9)} ${ratio(floors.pipelined).padStart(11)}\n`,
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

import { FairMutex } from '../recipes/mutex.js';
import { ReadWriteLock } from '../recipes/rw-lock.js';
import { connect } from '../src/connect.js';
import type { Case } from './case.js';
import { alternate, summarize, timed } from './stats.js';
import { heading, ms, printCases } from './table.js';
import { CASES } from './zookeeper.js';

/**
 * Item 7: the memory backend's cycle, which users' unit tests pay for every lock they take: in
 * microseconds, and beside the ZooKeeper cycle of the same run when that ran too.
 */
export const memoryCycle: Case = {
  name: 'memory.cycle',
  async run({ size, report, figures }) {
    const session = await connect('memory://bench-cycle/bench');
    try {
      const mutex = new FairMutex(session, 'cycle');
      const rw = new ReadWriteLock(session, 'rw-cycle');
      const samples = await alternate(
        {
          'memory FairMutex acquire+release': timed(async () => (await mutex.acquire()).release()),
          'memory readLock acquire+release': timed(async () => (await rw.readLock.acquire()).release()),
          'memory writeLock acquire+release': timed(async () => (await rw.writeLock.acquire()).release()),
        },
        { blocks: size.blocks, perBlock: size.perBlock * 10, warmup: 2_000 },
      );
      const results = Object.entries(samples).map(([name, values]) => summarize(name, values));
      const zk = figures.get(`zk ${CASES.mutex}`);
      heading('7. memory backend cycle (in process)');
      printCases(results, zk === undefined ? {} : { 'ZK FairMutex': zk });
      const mutexCycle = results[0]!;
      const beside =
        zk === undefined ? '' : `, ${((mutexCycle.medianMs / zk.medianMs) * 100).toFixed(1)}% of the ZooKeeper cycle`;
      report.info(
        7,
        'memory FairMutex cycle, median / p99',
        mutexCycle.medianMs,
        `${ms(mutexCycle.medianMs)} / ${ms(mutexCycle.p99Ms)}, ${mutexCycle.opsPerSec.toFixed(0)} ops/s${beside}`,
      );
      return results;
    } finally {
      await session.close();
    }
  },
};

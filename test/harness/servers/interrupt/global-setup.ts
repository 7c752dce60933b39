import type { TestProject } from 'vitest/node';

import { removeWithRun } from '../process.js';
import { startRedis } from '../redis.js';
import { startZooKeeper } from '../zookeeper.js';

/** Servers of the main vitest process, started as the suite's global setup starts its own. */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  removeWithRun(project.tmpDir);
  const [redis, zk] = await Promise.all([startRedis(), startZooKeeper({ size: 1 })]);
  return async () => {
    await Promise.all([redis.stop(), zk.stop()]);
  };
}

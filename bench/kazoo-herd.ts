import { fileURLToPath } from 'node:url';

import { sleep } from './clock.js';
import { kazooInstalled, PYTHON } from './kazoo.js';
import { LineProcess } from './line-process.js';
import { untilWatches, zkMetrics } from './zk-metrics.js';

const SCRIPT = fileURLToPath(new URL('./kazoo_herd.py', import.meta.url));

/**
 * kazoo's Lock with `count` waiters (kazoo_herd.py): the watches the server fired for one release,
 * from the first waiter's grant and `settleMs` longer. Undefined when kazoo is not installed.
 */
export async function kazooHerd(hosts: string, count: number, settleMs: number): Promise<number | undefined> {
  if (!(await kazooInstalled())) return undefined;
  const peer = await new LineProcess(PYTHON, [SCRIPT, hosts, String(count)], 'kazoo herd').ready();
  try {
    await untilWatches(hosts, count);
    const before = (await zkMetrics(hosts)).watchesFired;
    const granted = await peer.ask('release');
    if (granted !== 'granted') throw new Error(`kazoo herd answered ${granted}`);
    await sleep(settleMs);
    const fired = (await zkMetrics(hosts)).watchesFired - before;
    const done = await peer.ask('drain');
    if (done !== 'done 0') throw new Error(`kazoo herd: ${done} grants out of queue order`);
    return fired;
  } finally {
    await peer.stop();
  }
}

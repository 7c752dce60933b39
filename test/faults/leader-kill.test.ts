import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEtcd, type EtcdCluster } from '../harness/etcd.js';
import { startZooKeeper, type ZkCluster } from '../harness/zookeeper.js';
import { checkIntervals, type Interval } from '../support/fault-contend.js';

const WORKER = fileURLToPath(new URL('../support/fault-worker.ts', import.meta.url));
const WORKERS = 8;

/** Runs the contenders in their own processes; resolves with every belief interval they reported. */
function contenders(url: string, options: object, count: number, holdMs: number): { done: Promise<Interval[]>; sessions: () => number } {
  const intervals: Interval[] = [];
  let sessions = 0;
  const runs = Array.from({ length: WORKERS }, (_, worker) => {
    const child = fork(WORKER, [url, String(worker), String(count), String(holdMs), JSON.stringify(options)], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    child.on('message', (message: { type: string; interval?: Interval; sessions?: number }) => {
      if (message.type === 'interval' && message.interval) intervals.push(message.interval);
      if (message.type === 'done') sessions += message.sessions ?? 0;
    });
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 150_000);
      child.on('exit', (code, signal) => {
        clearTimeout(timer);
        if (code === 0) resolve();
        else reject(new Error(`contender ${worker} exited with ${code ?? signal}`));
      });
    });
  });
  return { done: Promise.all(runs).then(() => intervals), sessions: () => sessions };
}

interface Killable {
  leader(): Promise<{ kill(): Promise<void>; start(): Promise<void> } | undefined>;
}

/** Kills the leader `times` times while the contenders run, restarting it each time. */
async function killLeaders(cluster: Killable, times: number, pauseMs: number): Promise<number> {
  let kills = 0;
  for (let i = 0; i < times; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
    const leader = await cluster.leader();
    if (leader === undefined) continue;
    await leader.kill();
    kills += 1;
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
    await leader.start();
  }
  return kills;
}

describe('leader kills while 8 processes contend on one lock', () => {
  let zk: ZkCluster;
  let etcd: EtcdCluster;
  beforeAll(async () => {
    [zk, etcd] = await Promise.all([startZooKeeper({ size: 3 }), startEtcd({ size: 3 })]);
  }, 60_000);
  afterAll(async () => {
    await Promise.allSettled([zk.stop(), etcd.stop()]);
  });

  it.each([
    ['ZooKeeper', () => `zk://${zk.connectString}/leader-kill`, { sessionTimeoutMs: 4_000 }, () => zk as Killable],
    ['etcd', () => `etcd://${etcd.endpoints.map((e) => e.replace('http://', '')).join(',')}/leader-kill`, { ttlSeconds: 4 }, () => etcd as Killable],
  ])('%s: no two holders that believe they hold overlap, fencing tokens only grow', async (_name, url, options, cluster) => {
    const run = contenders(url(), options, 25, 5);
    const [intervals, kills] = await Promise.all([run.done, killLeaders(cluster(), 3, 1_000)]);
    expect(kills).toBeGreaterThan(0);
    expect(intervals).toHaveLength(WORKERS * 25);
    expect(checkIntervals(intervals)).toEqual([]);
    console.info(`${_name}: ${intervals.length} holds, ${kills} leader kills, ${intervals.filter((i) => i.lost).length} holds told they were lost, ${run.sessions()} sessions`);
  }, 180_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { etcdFixtureOf } from '../harness/backends/etcd.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { zkFixtureOf } from '../harness/backends/zookeeper.js';
import { FencedRegister } from '../harness/checkers/fenced-register.js';
import { checkIntervals } from '../harness/faults/fault-contender.js';
import { useContenderPool } from '../harness/faults/layouts.js';
import { type EtcdCluster, startEtcd } from '../harness/servers/etcd.js';
import { startZooKeeper, type ZkCluster } from '../harness/servers/zookeeper.js';
import { eventually } from '../harness/wait.js';

const WORKERS = 8;
const KILLS = 3;
const ZK_SESSION_TIMEOUT_MS = 4_000;
const ETCD_TTL_SECONDS = 4;
const NAMESPACE = 'leader-kill';

interface Killable {
  leader(): Promise<{ kill(): Promise<void>; start(): Promise<void> } | undefined>;
}

/** Servers of its own for each layout: killing the shared ones would disturb the suites running beside. */
interface Deployment {
  readonly fixture: Fixture;
  readonly cluster: Killable;
  readonly timeoutMs: number;
  stop(): Promise<void>;
}

function zkDeployment(zk: ZkCluster, name: string): Deployment {
  const info = {
    connectString: zk.connectString,
    ports: zk.members.map((m) => m.clientPort),
    sessionTimeoutMs: ZK_SESSION_TIMEOUT_MS,
  };
  return {
    fixture: zkFixtureOf(info, name),
    // A standalone server elects nobody: the server itself is what goes down and comes back.
    cluster: { leader: async () => (zk.members.length === 1 ? zk.members[0] : zk.leader()) },
    timeoutMs: ZK_SESSION_TIMEOUT_MS,
    stop: () => zk.stop(),
  };
}

function etcdDeployment(etcd: EtcdCluster, name: string): Deployment {
  return {
    fixture: etcdFixtureOf({ endpoints: etcd.endpoints, ttlSeconds: ETCD_TTL_SECONDS }, name),
    cluster: etcd,
    timeoutMs: ETCD_TTL_SECONDS * 1_000,
    stop: () => etcd.stop(),
  };
}

const layouts: { name: string; start(): Promise<Deployment> }[] = [
  {
    name: 'zkStandalone',
    start: async () => zkDeployment(await startZooKeeper({ size: 1 }), 'ZooKeeper (standalone)'),
  },
  {
    name: 'zkEnsemble',
    start: async () => zkDeployment(await startZooKeeper({ size: 3 }), 'ZooKeeper (3-node ensemble)'),
  },
  { name: 'etcdStandalone', start: async () => etcdDeployment(await startEtcd({ size: 1 }), 'etcd (standalone)') },
  { name: 'etcdCluster', start: async () => etcdDeployment(await startEtcd({ size: 3 }), 'etcd (3-node cluster)') },
];

/**
 * Kills the leader `times` times and restarts it at once. Before every kill and after the last
 * restart it waits for `progressed`, so that each kill lands while the processes contend.
 */
async function killLeader(deployment: Deployment, times: number, progressed: () => Promise<void>): Promise<number> {
  let kills = 0;
  for (let i = 0; i < times; i += 1) {
    await progressed();
    let leader: Awaited<ReturnType<Killable['leader']>>;
    await eventually(
      'a leader',
      async () => (leader = await deployment.cluster.leader()) !== undefined,
      deployment.timeoutMs * 5,
    );
    await leader!.kill();
    kills += 1;
    await leader!.start();
  }
  await progressed();
  return kills;
}

const pool = useContenderPool(WORKERS);

describe.each(layouts)(
  `leader killed ${KILLS} times while ${WORKERS} processes contend on one lock: $name`,
  (layout) => {
    let deployment: Deployment;
    let register: FencedRegister;
    beforeAll(async () => {
      [deployment, register] = await Promise.all([layout.start(), FencedRegister.start()]);
    }, 60_000);
    afterAll(async () => {
      await Promise.allSettled([deployment?.stop(), register?.close()]);
    });

    it('no two holders that believe they hold overlap, and every write made while holding is accepted', async () => {
      const { fixture, timeoutMs } = deployment;
      const run = pool().run({
        url: fixture.url(NAMESPACE),
        options: fixture.options,
        count: 5_000,
        holdMs: 5,
        registerUrl: register.url,
        limitMs: timeoutMs * 30,
      });
      const progressed = async (): Promise<void> => {
        const mark = run.intervals.length;
        await eventually('the processes keep acquiring', () => run.intervals.length >= mark + WORKERS, timeoutMs * 10);
      };
      // The run ends (and the pool is free for the next layout) also when a kill or a wait fails.
      const [killed, finished] = await Promise.allSettled([
        killLeader(deployment, KILLS, progressed).finally(() => run.stop()),
        run.done,
      ]);
      if (killed.status === 'rejected') throw killed.reason;
      if (finished.status === 'rejected') throw finished.reason;
      const [kills, { sessions }] = [killed.value, finished.value];
      const intervals = run.intervals;
      expect(kills).toBe(KILLS);
      expect(checkIntervals(intervals)).toEqual([]);
      const refusedWhileHeld = intervals.filter((i) => i.write?.whileHeld === true && !i.write.accepted);
      expect(refusedWhileHeld, 'writes refused although their holder still believed it held').toEqual([]);
      const late = intervals.filter((i) => i.late !== undefined);
      console.info(
        `${layout.name}: ${intervals.length} holds by ${WORKERS} processes over ${sessions} sessions, ${kills} leader kills; ` +
          `${intervals.filter((i) => i.write?.whileHeld).length} writes while holding, all accepted; ` +
          `${intervals.filter((i) => i.lost).length} holds told they were lost, ${late.length} late writes, ${late.filter((i) => !i.late!.accepted).length} refused`,
      );
      // Entries of sessions lost on the client side go when the server expires them.
      await eventually('no orphan entry', async () => (await fixture.entries(NAMESPACE)).length === 0, timeoutMs * 2);
      expect(await fixture.watched(NAMESPACE), 'watches left behind').toEqual([]);
      await fixture.cleanup(NAMESPACE);
    }, 180_000);
  },
);

import type { ConnectOptions } from '../../../src/connect.js';
import { etcdFixtureOf } from '../backends/etcd.js';
import type { Fixture } from '../backends/fixture.js';
import { mysqlFixtureOf, withMysql } from '../backends/mysql.js';
import { postgresFixtureOf, withParams, withPostgres } from '../backends/postgres.js';
import { redisFixtureOf } from '../backends/redis.js';
import { zkFixtureOf } from '../backends/zookeeper.js';
import { FencedRegister } from '../checkers/fenced-register.js';
import { startEtcd } from '../servers/etcd.js';
import { zkMode } from '../servers/four-letter.js';
import { startMysql } from '../servers/mysql.js';
import { PeerLinks } from '../servers/peer-links.js';
import { startPostgres } from '../servers/postgres.js';
import { TcpProxy } from '../servers/proxy.js';
import { reply, startRedis, startRedisCluster } from '../servers/redis.js';
import { startZooKeeper } from '../servers/zookeeper.js';
import { eventually } from '../wait.js';
import { ContenderPool } from './contender-pool.js';
import { checkIntervals, type ContendPlan, type Interval } from './fault-contender.js';

export type TortureBackend = 'zk' | 'etcd' | 'postgres' | 'redis' | 'redis-cluster' | 'mysql';
export const FAULT_KINDS = [
  'leader-kill',
  'member-kill',
  'server-partition',
  'server-restart',
  'backend-terminate',
  'partition',
  'short-disconnect',
  'expiry',
] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** The faults a run on `backend` injects: on the servers, then on the contenders. */
export function faultKindsOf(backend: TortureBackend): { server: FaultKind[]; client: FaultKind[] } {
  const client: FaultKind[] = ['partition', 'short-disconnect', 'expiry'];
  // One PostgreSQL server: restarted (fast or immediate shutdown), or some of its sessions' backends terminated.
  if (backend === 'postgres') return { server: ['server-restart', 'backend-terminate'], client };
  // One MariaDB server: restarted (a clean shutdown or a crash), or some of its sessions' connections KILLed.
  if (backend === 'mysql') return { server: ['server-restart', 'backend-terminate'], client };
  // One Redis primary: killed and restarted (its kill is the leader's; there is no other member).
  if (backend === 'redis') return { server: ['leader-kill'], client };
  // A Redis Cluster of 3 masters: each killed in turn and restarted. Its client learns the nodes'
  // addresses from the cluster (CLUSTER SLOTS), so proxies in front of the seeds would not cut its
  // connections to the other nodes: of the contender faults only the server-side expiry is left.
  if (backend === 'redis-cluster') return { server: ['leader-kill'], client: ['expiry'] };
  return { server: ['leader-kill', 'member-kill', 'server-partition'], client };
}

export interface TortureOptions {
  readonly backend: TortureBackend;
  /** How long faults are injected; the run then lets every contender finish and checks. */
  readonly durationMs: number;
  /**
   * Goes on injecting past `durationMs` until every kind of fault was injected at least once, for up
   * to this long in all: the schedule's pace does not depend on the machine's load, a restarted
   * member's start-up does, so that a short run in the suite still injects every kind.
   */
  readonly everyKindWithinMs?: number;
  /** Contending processes (default 8), each behind proxies of its own. */
  readonly workers?: number;
  /** Seeds the fault schedule (which fault, whom, when, how long). Default: random, and reported. */
  readonly seed?: number;
  /** ZooKeeper session timeout / etcd lease TTL (default 4 000 ms); every fault's length derives from it. */
  readonly timeoutMs?: number;
  /** Contender processes to use (the test suite starts them once); otherwise the run starts its own. */
  readonly pool?: ContenderPool;
  /** Each fault as it is injected, with the run's elapsed time. */
  readonly log?: (line: string) => void;
}

export interface TortureSummary {
  readonly backend: TortureBackend;
  readonly seed: number;
  readonly workers: number;
  readonly timeoutMs: number;
  readonly durationMs: number;
  /** Grants whose holder believed it held (signal not aborted when the acquire resolved). */
  readonly acquisitions: number;
  /** Grants whose signal had already aborted when the acquire resolved (a loss in between). */
  readonly abortedAtGrant: number;
  /** Holds whose signal aborted while held. */
  readonly lostHolds: number;
  /** Sessions the contenders opened in all (one each to start with, one more after every loss). */
  readonly sessions: number;
  readonly faults: Record<FaultKind, number>;
  /** Overlapping beliefs, tokens not increasing, a write refused although its holder believed it held. */
  readonly violations: readonly string[];
  /** Writes a holder made after it was told it lost, refused by the fenced register. */
  readonly staleWritesRefused: number;
  /** Such late writes accepted: made before any later holder had written, so they harmed nobody. */
  readonly lateWritesAccepted: number;
  /** Holds of sessions expired by the server on purpose that outlasted the next grant (fencing's case). */
  readonly forcedOverlaps: number;
  /** Acquires that timed out (a waiter nothing woke for `6 x timeoutMs`). */
  readonly stalls: number;
  /** Connects that failed (the contender tried again a moment later): how many, by error. */
  readonly connectFailures: Readonly<Record<string, number>>;
  /** Entries (and, on ZooKeeper, watches) left on the server once every contender closed its session. */
  readonly orphans: readonly string[];
  /** Over every hold lost without a server-side expiry: the least time from its signal to the next grant. */
  readonly smallestGapMs: number | null;
  /** Whether the run found nothing wrong: no violation, no stall, no orphan, and some acquisitions. */
  readonly ok: boolean;
}

/** A member of the 3-node layout, as the fault loop needs it. */
interface Member {
  readonly port: number;
  isAlive(): boolean;
  kill(): Promise<void>;
  start(): Promise<void>;
}

interface Deployment {
  readonly fixture: Fixture;
  /** PostgreSQL, MySQL: ends the server connections of some sessions (each with probability one half); how many. */
  terminate?(chance: () => number): Promise<number>;
  /** PostgreSQL, MySQL: rows left once expired sessions are swept (entries of sessions lost on the client side). */
  rowsAfterSweep?(namespace: string): Promise<string[]>;
  readonly members: readonly Member[];
  leader(): Promise<Member | undefined>;
  /**
   * Cuts `member` off from the leader (ZooKeeper: both ways, quorum and election ports) or from its
   * peers (etcd), while its clients still reach it. Resolves with the heal, which resolves once the
   * member follows a leader again.
   */
  cut(member: Member, leader: Member): Promise<() => Promise<void>>;
  /** The URL of a contender whose way to the members is `proxies` (one per member). */
  url(proxies: readonly TcpProxy[], namespace: string): string;
  readonly options: ConnectOptions;
  readonly expiry: NonNullable<ContendPlan['expiry']>;
  stop(): Promise<void>;
}

async function deploy(backend: TortureBackend, timeoutMs: number): Promise<Deployment> {
  if (backend === 'postgres') return deployPostgres(timeoutMs);
  if (backend === 'mysql') return deployMysql(timeoutMs);
  if (backend === 'redis-cluster') return deployRedisCluster(timeoutMs);
  if (backend === 'zk') {
    const links = new PeerLinks();
    const zk = await startZooKeeper({ size: 3, peerRoute: links.route });
    const info = {
      connectString: zk.connectString,
      ports: zk.members.map((m) => m.clientPort),
      sessionTimeoutMs: timeoutMs,
    };
    const members = zk.members.map((m) => ({
      port: m.clientPort,
      isAlive: () => m.isAlive(),
      kill: () => m.kill(),
      start: () => m.start(),
    }));
    const idOf = (member: Member): number => zk.members[members.indexOf(member)]!.id;
    return {
      fixture: zkFixtureOf(info, 'ZooKeeper (3-node ensemble)'),
      members,
      leader: async () => members[zk.members.indexOf((await zk.leader())!)],
      cut: async (member, leader) => {
        links.cut(idOf(member), idOf(leader));
        return async () => {
          links.heal(idOf(member), idOf(leader));
          const modes = async (): Promise<(string | undefined)[]> =>
            Promise.all(zk.members.map((m) => zkMode(m.clientPort)));
          await eventually(
            'the member cut off follows again',
            async () => (await modes()).filter((mode) => mode === 'follower').length === 2,
            timeoutMs * 10,
          );
        };
      },
      url: (proxies, namespace) => `zk://${proxies.map((p) => p.address).join(',')}/${namespace}`,
      options: { sessionTimeoutMs: timeoutMs },
      expiry: { zk: info },
      stop: () => zk.stop().finally(() => links.close()),
    };
  }
  if (backend === 'redis') {
    // The one configuration that keeps baton's promise across a restart: a single primary whose
    // every write is on disk before it is answered (docs/redis.md). Its kill is the leader's.
    const redis = await startRedis({ persistence: true });
    const info = { url: `redis://${redis.address}`, sessionTimeoutMs: timeoutMs };
    const member = {
      port: redis.port,
      isAlive: () => redis.isAlive(),
      kill: () => redis.kill(),
      start: () => redis.start(),
    };
    return {
      fixture: redisFixtureOf(info, 'Redis (one primary, appendfsync always)'),
      members: [member],
      leader: async () => (member.isAlive() ? member : undefined),
      cut: () => Promise.reject(new Error('a single Redis primary has no peer to be cut off from')),
      url: (proxies, namespace) => `redis://${proxies[0]!.address}?namespace=${namespace}`,
      options: { sessionTimeoutMs: timeoutMs },
      expiry: { redis: info },
      stop: () => redis.stop(),
    };
  }
  const etcd = await startEtcd({ size: 3, peerProxies: true });
  const info = { endpoints: etcd.endpoints, ttlSeconds: Math.round(timeoutMs / 1_000) };
  const members = etcd.members.map((m) => ({
    port: Number(new URL(m.clientUrl).port),
    isAlive: () => m.isAlive(),
    kill: () => m.kill(),
    start: () => m.start(),
  }));
  return {
    fixture: etcdFixtureOf(info, 'etcd (3-node cluster)'),
    members,
    leader: async () => members[etcd.members.indexOf((await etcd.leader())!)],
    cut: async (member) => {
      // Its peers reach it through its own proxy, and it reaches them through theirs, naming itself.
      const index = members.indexOf(member);
      const from = Buffer.from(`X-Server-From: ${await etcd.memberId(etcd.members[index]!)}\r\n`);
      const own = etcd.peerProxies[index]!;
      const others = etcd.peerProxies.filter((proxy) => proxy !== own);
      own.blackhole();
      for (const proxy of others) proxy.isolate((first) => first.includes(from));
      return async () => {
        own.drop();
        own.restore();
        for (const proxy of others) proxy.heal();
        await eventually(
          'the member cut off follows a leader again',
          async () => (await etcd.leaderSeenBy(etcd.members[index]!)) !== '0',
          timeoutMs * 10,
        );
      };
    },
    url: (proxies, namespace) => `etcd://${proxies.map((p) => p.address).join(',')}/${namespace}`,
    options: { ttlSeconds: info.ttlSeconds },
    expiry: { etcd: info },
    stop: () => etcd.stop(),
  };
}

/** One PostgreSQL server of the run's own: its one "member" is restarted, never cut off from peers it has not. */
async function deployPostgres(timeoutMs: number): Promise<Deployment> {
  const server = await startPostgres();
  let signal: NodeJS.Signals = 'SIGINT';
  const member: Member = {
    port: server.port,
    isAlive: () => server.isAlive(),
    // Alternately a fast shutdown and an immediate one (crash recovery at the restart).
    kill: async () => {
      await server.kill(signal);
      signal = signal === 'SIGINT' ? 'SIGQUIT' : 'SIGINT';
    },
    start: () => server.start(),
  };
  return {
    fixture: postgresFixtureOf(server.url, 'PostgreSQL', 'baton', timeoutMs),
    members: [member],
    leader: async () => (server.isAlive() ? member : undefined),
    cut: () => Promise.reject(new Error('a single PostgreSQL server has no peers to be cut off from')),
    url: (proxies, namespace) => {
      const url = new URL(server.url);
      url.host = proxies[0]!.address;
      return withParams(url.toString(), { namespace });
    },
    options: { sessionTimeoutMs: timeoutMs },
    expiry: { postgres: { url: server.url, schema: 'baton' } },
    terminate: (chance) =>
      withPostgres(server.url, async (client) => {
        const pids = (
          await client.query<{ pid: number }>(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'baton' AND pid <> pg_backend_pid()",
          )
        ).rows.map((row) => row.pid);
        const chosen = pids.filter(() => chance() < 0.5);
        await client.query('SELECT pg_terminate_backend(pid) FROM unnest($1::int[]) AS pid', [chosen]);
        return chosen.length;
      }),
    rowsAfterSweep: (namespace) =>
      withPostgres(server.url, async (client) => {
        await client.query('DELETE FROM baton.sessions WHERE expires_at <= clock_timestamp()');
        return (
          await client.query<{ key: string }>('SELECT key FROM baton.entries WHERE namespace = $1', [namespace])
        ).rows.map((row) => `row ${row.key}`);
      }),
    stop: () => server.stop(),
  };
}

/**
 * One MariaDB server of the run's own that writes its log at every commit (a crash then loses nothing
 * it answered): restarted after a clean shutdown (SIGTERM) or a crash (SIGKILL) in turn; its
 * "terminate" KILLs some of the sessions' connections (main, heartbeat or wait connections alike).
 */
async function deployMysql(timeoutMs: number): Promise<Deployment> {
  const server = await startMysql({ durable: true });
  let signal: NodeJS.Signals = 'SIGTERM';
  const member: Member = {
    port: server.port,
    isAlive: () => server.isAlive(),
    kill: async () => {
      await server.kill(signal);
      signal = signal === 'SIGTERM' ? 'SIGKILL' : 'SIGTERM';
    },
    start: () => server.start(),
  };
  return {
    fixture: mysqlFixtureOf(server.url, 'MariaDB', timeoutMs),
    members: [member],
    leader: async () => (server.isAlive() ? member : undefined),
    cut: () => Promise.reject(new Error('a single MariaDB server has no peers to be cut off from')),
    url: (proxies, namespace) => {
      const url = new URL(server.url);
      url.host = proxies[0]!.address;
      url.searchParams.set('namespace', namespace);
      return url.toString();
    },
    options: { sessionTimeoutMs: timeoutMs },
    expiry: { mysql: { url: server.url } },
    terminate: (chance) =>
      withMysql(server.url, async (connection) => {
        const [rows] = await connection.query(
          "SELECT id FROM information_schema.processlist WHERE user = 'baton' AND id <> CONNECTION_ID()",
        );
        const chosen = (rows as { id: number | string }[]).map((row) => Number(row.id)).filter(() => chance() < 0.5);
        // A connection may have ended meanwhile (unknown thread id): nothing to kill.
        for (const id of chosen) await connection.query(`KILL ${Math.trunc(id)}`).catch(() => undefined);
        return chosen.length;
      }),
    rowsAfterSweep: (namespace) =>
      withMysql(server.url, async (connection) => {
        await connection.query('DELETE FROM baton_sessions WHERE expires_at <= SYSDATE(6)');
        const [rows] = await connection.query('SELECT `key` FROM baton_entries WHERE namespace = ?', [namespace]);
        return (rows as { key: string }[]).map((row) => `row ${row.key}`);
      }),
    stop: () => server.stop(),
  };
}

/**
 * A Redis Cluster of 3 masters without replicas, each with appendfsync always (the cluster
 * configuration docs/redis.md says keeps the promise: no failover), and with
 * `cluster-require-full-coverage no`, so that a master down makes its own slots unavailable, not the
 * whole cluster's. There is no leader: `leader()` names the live master after the one killed last, so
 * that the leader kills go round the masters in turn. A killed master restarts from its AOF and
 * nodes.conf and is back once every node serves every slot again.
 */
async function deployRedisCluster(timeoutMs: number): Promise<Deployment> {
  const cluster = await startRedisCluster({
    masters: 3,
    args: ['--appendonly', 'yes', '--appendfsync', 'always', '--cluster-require-full-coverage', 'no'],
  });
  const info = { url: cluster.url, sessionTimeoutMs: timeoutMs, cluster: true as const, nodes: cluster.addresses };
  const whole = async (): Promise<boolean> => {
    const infos = await Promise.all(cluster.masters.map((m) => reply(m.port, ['CLUSTER', 'INFO']).catch(() => '')));
    return infos.every((text) => /^cluster_state:ok\r?$/m.test(text) && /^cluster_slots_ok:16384\r?$/m.test(text));
  };
  let killedLast = -1;
  const members: Member[] = cluster.masters.map((master, index) => ({
    port: master.port,
    isAlive: () => master.isAlive(),
    kill: async () => {
      killedLast = index;
      await master.kill();
    },
    start: async () => {
      await master.start();
      await eventually('every node serving every slot again after a restart', whole, timeoutMs * 10);
    },
  }));
  return {
    fixture: redisFixtureOf(info, 'Redis Cluster (3 masters, appendfsync always)'),
    members,
    leader: async () => {
      for (let step = 1; step <= members.length; step += 1) {
        const member = members[(killedLast + step) % members.length]!;
        if (member.isAlive()) return member;
      }
      return undefined;
    },
    cut: () => Promise.reject(new Error('the Redis Cluster layout cuts no member off its peers')),
    url: (_proxies, namespace) => `redis://${cluster.addresses.join(',')}?namespace=${namespace}`,
    options: { sessionTimeoutMs: timeoutMs },
    expiry: { redis: info },
    stop: () => cluster.stop(),
  };
}

/** A small seeded generator (mulberry32): the same seed gives the same fault schedule. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Draws kinds in rounds: each kind once per round, in an order shuffled by `next`. */
function rounds<T>(kinds: readonly T[], next: () => number): { take(): T; putBack(kind: T): void } {
  const pending: T[] = [];
  return {
    take() {
      if (pending.length === 0) {
        const round = [...kinds];
        for (let i = round.length - 1; i > 0; i -= 1) {
          const j = Math.floor(next() * (i + 1));
          [round[i], round[j]] = [round[j]!, round[i]!];
        }
        pending.push(...round);
      }
      return pending.shift()!;
    },
    putBack(kind) {
      pending.unshift(kind);
    },
  };
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The contended workload under random faults, against a 3-node layout of its own: `workers`
 * processes contend on one FairMutex, each through proxies of its own (one per member), writing
 * every hold's token to a fenced register. Two fault loops run for `durationMs`: one kills the
 * leader or another member and restarts it, or cuts a member off from the leader (server to server)
 * and heals it, the other partitions a contender for longer than the
 * session timeout, disconnects it briefly, or has its session expired by the server. Then every
 * fault is healed, the contenders stop, and the run reports what the checks found.
 */
export async function torture(options: TortureOptions): Promise<TortureSummary> {
  const workers = options.workers ?? 8;
  const timeoutMs = options.timeoutMs ?? 4_000;
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const next = random(seed);
  const between = (low: number, high: number): number => low + (high - low) * next();
  const log = options.log ?? (() => undefined);
  const namespace = `torture-${seed}`;
  const faults = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>;

  const kinds = faultKindsOf(options.backend);
  const [deployment, register] = await Promise.all([deploy(options.backend, timeoutMs), FencedRegister.start()]);
  const proxies: TcpProxy[][] = [];
  const ownPool = options.pool === undefined;
  let pool: ContenderPool | undefined = options.pool;
  try {
    // Proxies only where a contender fault cuts through them (not on a Redis Cluster: see faultKindsOf).
    const proxied = kinds.client.some((kind) => kind === 'partition' || kind === 'short-disconnect');
    for (let worker = 0; worker < workers; worker += 1)
      proxies.push(proxied ? await Promise.all(deployment.members.map((m) => TcpProxy.start({ port: m.port }))) : []);
    const longestMs = Math.max(options.durationMs, options.everyKindWithinMs ?? 0);
    // Their lifetime counts from the fork: five minutes more for starting them on a loaded machine.
    pool ??= await ContenderPool.start(workers, longestMs + timeoutMs * 40 + 300_000);
    if (pool.size !== workers) throw new Error(`the pool has ${pool.size} contenders, the run wants ${workers}`);
    const started = performance.now();
    const elapsed = (): string => `+${((performance.now() - started) / 1_000).toFixed(1)}s`;
    const run = pool.run(
      {
        url: '',
        options: deployment.options,
        count: 1_000_000,
        holdMs: 5,
        registerUrl: register.url,
        limitMs: longestMs + timeoutMs * 30,
        acquireTimeoutMs: timeoutMs * 6,
        expiry: deployment.expiry,
      },
      // Both suspend policies and both waiter-lost policies are in every run.
      (worker) => ({
        url: deployment.url(proxies[worker]!, namespace),
        // Most holds are short; the last two contenders hold for an eighth of the timeout, so that
        // faults also find holders in the middle of a hold, not only in its first milliseconds.
        holdMs: worker >= workers - 2 ? Math.round(timeoutMs / 8) : 2 + (worker % 4) * 4,
        options: {
          ...deployment.options,
          onSuspend: worker % 2 === 0 ? 'wait' : 'abort',
          onWaiterLost: worker % 4 < 2 ? 'requeue' : 'fail',
        },
      }),
    );
    // A contender process that dies fails the run: the fault loops stop, and the failure is thrown
    // below once they have, so that the servers are still stopped (not an unhandled rejection meanwhile).
    let contenderDied = false;
    run.done.catch(() => (contenderDied = true));
    const ending = performance.now() + options.durationMs;
    const latest = performance.now() + longestMs;
    /** Whether a loop injecting `own` kinds goes on: for `durationMs`, then until each was injected. */
    const running = (own: readonly FaultKind[]): boolean => {
      const now = performance.now();
      return !contenderDied && (now < ending || (now < latest && own.some((kind) => faults[kind] === 0)));
    };

    // Kinds are drawn in rounds, each kind once per round in a random order: a short run injects every kind.
    const kills = rounds<FaultKind>(kinds.server, next);
    const clientFaults = rounds<FaultKind>(kinds.client, next);

    // Members: one down at a time, so that the layout keeps its quorum and the workload progresses.
    const killLoop = async (): Promise<void> => {
      // The first fault comes soon: a short run then has room for each of the three kinds.
      for (let first = true; running(kinds.server); first = false) {
        await sleep(first ? between(timeoutMs * 0.25, timeoutMs * 0.5) : between(timeoutMs * 0.5, timeoutMs * 1.5));
        if (!running(kinds.server)) return;
        const leader = await deployment.leader();
        const drawn = kills.take();
        if (drawn === 'backend-terminate') {
          const terminated = await deployment.terminate!(next);
          log(
            `${elapsed()} backend-terminate: ${terminated} of the sessions' connections terminated (${options.backend === 'mysql' ? 'KILL' : 'pg_terminate_backend'})`,
          );
          faults['backend-terminate'] += 1;
          continue;
        }
        const kind: FaultKind = drawn === 'server-restart' ? drawn : leader === undefined ? 'member-kill' : drawn;
        const victims =
          kind === 'leader-kill'
            ? [leader!]
            : kind === 'server-restart'
              ? deployment.members.filter((m) => m.isAlive())
              : deployment.members.filter((m) => m !== leader && m.isAlive());
        const victim = victims[Math.floor(next() * victims.length)];
        if (victim === undefined) continue;
        if (kind === 'server-partition') {
          // A follower cut off from the leader while its clients still reach it, longer than a session.
          const forMs = between(timeoutMs * 1.3, timeoutMs * 2);
          log(
            `${elapsed()} server-partition: member on port ${victim.port} cut off from the leader for ${(forMs / 1_000).toFixed(1)}s`,
          );
          const heal = await deployment.cut(victim, leader!);
          faults['server-partition'] += 1;
          await sleep(forMs);
          await heal();
          continue;
        }
        const downMs = between(timeoutMs * 0.25, timeoutMs * 1.5);
        log(`${elapsed()} ${kind}: member on port ${victim.port}, down for ${(downMs / 1_000).toFixed(1)}s`);
        await victim.kill();
        faults[kind] += 1;
        await sleep(downMs);
        await victim.start();
        await eventually(
          'a leader after the restart',
          async () => (await deployment.leader()) !== undefined,
          timeoutMs * 10,
        );
      }
    };

    // Contenders: a partition longer than the session, a short disconnect, or a server-side expiry.
    const faulted = new Set<number>();
    const partitions: Promise<void>[] = [];
    const clientLoop = async (): Promise<void> => {
      while (running(kinds.client)) {
        await sleep(between(timeoutMs * 0.3, timeoutMs));
        if (!running(kinds.client)) return;
        // Most faults aim at the holder of the moment, the others at anyone (mostly waiters).
        const kind = clientFaults.take();
        const everyone = Array.from({ length: workers }, (_, w) => w);
        const free = (next() < 0.75 ? pool!.holding : everyone).filter((w) => !faulted.has(w));
        const worker = free[Math.floor(next() * free.length)];
        if (worker === undefined) {
          clientFaults.putBack(kind);
          continue;
        }
        const own = proxies[worker]!;
        if (kind === 'partition' && faulted.size >= 2) {
          clientFaults.putBack(kind); // two contenders cut off at once is enough: the others must progress
          continue;
        }
        if (kind === 'partition') {
          const forMs = between(timeoutMs * 1.3, timeoutMs * 2.5);
          log(`${elapsed()} partition: worker ${worker} cut off for ${(forMs / 1_000).toFixed(1)}s`);
          faulted.add(worker);
          // A holder cut off goes on with its job: only its signal may end its belief.
          pool!.linger(worker, true);
          for (const proxy of own) proxy.blackhole();
          faults.partition += 1;
          partitions.push(
            sleep(forMs).then(() => {
              for (const proxy of own) proxy.restore();
              pool!.linger(worker, false);
              faulted.delete(worker);
            }),
          );
        } else if (kind === 'short-disconnect') {
          faults['short-disconnect'] += 1;
          if (next() < 0.5) {
            log(`${elapsed()} short-disconnect: worker ${worker}'s connections dropped`);
            for (const proxy of own) proxy.drop();
          } else {
            const forMs = between(timeoutMs * 0.1, timeoutMs * 0.3);
            log(`${elapsed()} short-disconnect: worker ${worker} cut off for ${forMs.toFixed(0)}ms`);
            pool!.linger(worker, true);
            for (const proxy of own) proxy.blackhole();
            await sleep(forMs);
            for (const proxy of own) proxy.restore();
            pool!.linger(worker, false);
          }
        } else {
          faulted.add(worker);
          try {
            const session = await pool!.expire(worker);
            if (session !== undefined) {
              faults.expiry += 1;
              log(`${elapsed()} expiry: worker ${worker}'s session ${session} ended by the server`);
            } else clientFaults.putBack(kind); // between sessions: another worker's turn soon
          } catch (error) {
            // A member down at that moment can keep the second client out; the workload goes on.
            log(`${elapsed()} expiry: worker ${worker}: ${(error as Error).message}`);
            clientFaults.putBack(kind);
          } finally {
            faulted.delete(worker);
          }
        }
      }
    };

    const loops = await Promise.allSettled([killLoop(), clientLoop()]);
    log(`${elapsed()} fault loops ended: stopping the contenders`);
    const injectedMs = Math.round(performance.now() - started);
    await Promise.all(partitions);
    run.stop();
    const { sessions } = await run.done;
    const connectFailures: Record<string, number> = {};
    for (const failure of run.connectFailures) {
      // A redirection names its slot and node: grouped without them (one line per slot is no help).
      const error = failure.error.replace(/\b(MOVED|ASK) \d+ \S+/g, '$1 <slot> <node>');
      connectFailures[error] = (connectFailures[error] ?? 0) + 1;
    }
    for (const loop of loops) if (loop.status === 'rejected') throw loop.reason;
    log(`${elapsed()} faults healed, contenders stopped`);

    const orphans: string[] = [];
    // Sessions lost on the client side leave their entries until the server expires them.
    await eventually(
      'no entry left',
      async () => (await deployment.fixture.entries(namespace)).length === 0,
      timeoutMs * 3,
    ).catch(() => undefined);
    orphans.push(...(await deployment.fixture.entries(namespace)));
    if (options.backend === 'zk')
      orphans.push(...(await deployment.fixture.watched(namespace)).map((path) => `watch on ${path}`));
    if (deployment.rowsAfterSweep !== undefined) {
      // Rows of sessions lost on the client side outlive their lease until swept: after the sweep, none.
      await eventually(
        'the lost sessions expired',
        async () => (await deployment.fixture.entries(namespace)).length === 0,
        timeoutMs * 3,
      ).catch(() => undefined);
      orphans.push(...(await deployment.rowsAfterSweep(namespace)).filter((row) => !orphans.includes(row)));
    }
    return summarize(run.intervals, run.stalls.length, {
      backend: options.backend,
      seed,
      workers,
      timeoutMs,
      durationMs: injectedMs,
      sessions,
      faults,
      orphans,
      connectFailures,
    });
  } finally {
    for (const own of proxies) for (const proxy of own) await proxy.close();
    await Promise.allSettled([ownPool ? pool?.close() : undefined, deployment.stop(), register.close()]);
  }
}

type Known = Pick<
  TortureSummary,
  'backend' | 'seed' | 'workers' | 'timeoutMs' | 'durationMs' | 'sessions' | 'faults' | 'orphans' | 'connectFailures'
>;

/** The checks of a run, over every hold the contenders reported. */
export function summarize(intervals: readonly Interval[], stalls: number, known: Known): TortureSummary {
  const believed = intervals.filter((i) => i.believed).sort((a, b) => (BigInt(a.from) < BigInt(b.from) ? -1 : 1));
  const violations = checkIntervals(intervals);
  for (const i of believed) {
    const fenced = i.forcedAt !== undefined && i.writeAt !== undefined && BigInt(i.forcedAt) <= BigInt(i.writeAt);
    if (i.write !== undefined && i.write.whileHeld && !i.write.accepted && !fenced) {
      violations.push(
        `worker ${i.worker} (token ${i.token}) had its write refused while it believed it held; the register had seen ${i.write.highest}`,
      );
    }
  }
  let smallestGapNs: bigint | undefined;
  let forcedOverlaps = 0;
  believed.forEach((hold, index) => {
    const after = believed[index + 1];
    if (after === undefined) return;
    if (hold.forcedAt !== undefined && BigInt(after.from) < BigInt(hold.to)) forcedOverlaps += 1;
    else if (hold.lost && hold.forcedAt === undefined) {
      const gap = BigInt(after.from) - BigInt(hold.to);
      if (smallestGapNs === undefined || gap < smallestGapNs) smallestGapNs = gap;
    }
  });
  const late = intervals.filter((i) => i.late !== undefined);
  const summary = {
    ...known,
    acquisitions: believed.length,
    abortedAtGrant: intervals.length - believed.length,
    lostHolds: believed.filter((i) => i.lost).length,
    violations,
    staleWritesRefused: late.filter((i) => !i.late!.accepted).length,
    lateWritesAccepted: late.filter((i) => i.late!.accepted).length,
    forcedOverlaps,
    stalls,
    smallestGapMs: smallestGapNs === undefined ? null : Number(smallestGapNs) / 1e6,
  };
  return {
    ...summary,
    ok: violations.length === 0 && stalls === 0 && known.orphans.length === 0 && believed.length > 0,
  };
}

const LAYOUT_NAMES: Record<TortureBackend, string> = {
  zk: 'ZooKeeper (3-node ensemble)',
  etcd: 'etcd (3-node cluster)',
  postgres: 'PostgreSQL (one server)',
  redis: 'Redis (one primary, appendfsync always)',
  'redis-cluster': 'Redis Cluster (3 masters, no replicas, appendfsync always)',
  mysql: 'MariaDB (one server, innodb_flush_log_at_trx_commit=1)',
};

/** The summary as a few readable lines. */
export function describeSummary(s: TortureSummary): string {
  const { server, client } = faultKindsOf(s.backend);
  const faults = [...server, ...client].map((kind) => `${kind} ${s.faults[kind]}`).join(', ');
  const failedConnects = Object.values(s.connectFailures).reduce((a, b) => a + b, 0);
  return [
    `torture on ${LAYOUT_NAMES[s.backend]}: ${s.workers} processes, ${(s.durationMs / 1_000).toFixed(0)} s, timeout ${s.timeoutMs} ms, seed ${s.seed}`,
    `  acquisitions        ${s.acquisitions} (${s.lostHolds} lost while held, ${s.abortedAtGrant} lost before the holder saw the grant), ${s.sessions} sessions`,
    `  faults injected     ${faults}`,
    `  violations          ${s.violations.length}${s.violations
      .slice(0, 10)
      .map((v) => `\n    ${v}`)
      .join('')}${s.violations.length > 10 ? `\n    (${s.violations.length - 10} more)` : ''}`,
    `  stale writes refused ${s.staleWritesRefused} (late writes accepted before any later holder wrote: ${s.lateWritesAccepted}; server-side expiries outlasting the next grant, fenced: ${s.forcedOverlaps})`,
    `  stalled waiters     ${s.stalls}`,
    // Shown only when some failed: a contender whose connect fails tries again, so the run goes on.
    ...(failedConnects === 0
      ? []
      : [
          `  failed connects     ${failedConnects} (each tried again)${Object.entries(s.connectFailures)
            .map(([error, count]) => `\n    ${count} x ${error}`)
            .join('')}`,
        ]),
    `  orphans after heal  ${s.orphans.length}${s.orphans.length > 0 ? ` (${s.orphans.join(', ')})` : ''}`,
    `  smallest gap        ${s.smallestGapMs === null ? 'n/a (no hold lost on the client side)' : `${s.smallestGapMs.toFixed(1)} ms from a lost holder's signal to the next grant`}`,
    `  result              ${s.ok ? 'OK' : 'FAILED'}`,
  ].join('\n');
}

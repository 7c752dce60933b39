import { writeFileSync } from 'node:fs';
import os from 'node:os';

import type { Case, Context } from './case.js';
import { zkContended } from './contended.js';
import { etcdCycle } from './etcd.js';
import { etcdReuse } from './etcd-reuse.js';
import { mysqlFence, postgresFence, redisFence } from './fence.js';
import { etcdGuarded, postgresGuarded, redisGuarded, zkGuarded } from './guarded.js';
import { etcdHerd, memoryHerd, zkHerd } from './herd.js';
import { memoryCycle } from './memory.js';
import { mysqlContended, mysqlCycle, mysqlHerd } from './mysql.js';
import { mysqlScale } from './mysql-scale.js';
import { etcdParallel, zkParallel } from './parallel.js';
import { etcdPermits, memoryPermits, zkPermits } from './permits.js';
import { postgresContended, postgresCycle, postgresHerd } from './postgres.js';
import { redisContended, redisCycle, redisHerd } from './redis.js';
import { Report } from './report.js';
import { etcdScale, postgresScale, redisScale, zkScale } from './scale.js';
import { Servers } from './servers.js';
import type { Summary } from './stats.js';
import { machine, printSummary } from './table.js';
import { etcdWaiters, memoryWaiters, zkWaiters } from './waiters.js';
import { zkCycle } from './zookeeper.js';

/**
 * Cycles every kind of an uncontended case runs before its blocks count. V8 optimizes a function only
 * after enough calls with no new shapes seen; baton's own functions run only in baton's blocks, while
 * the client's code, which the floors are made of, runs in every kind's. Measured in one process
 * (2026-11-26, %GetOptimizationStatus every 250 cycles): baton's enqueue was optimized after 750 (etcd)
 * and 1,000 (ZooKeeper) cycles, its waiting loop after 1,250, the etcd withdraw after 1,500, and the
 * cycle time fell until about then. The earlier warm-up of 100 to 200 cycles left the first third of
 * baton's blocks partly unoptimized.
 */
const WARMUP_CYCLES = 1_500;

/** Every case, in the order a full run takes them. */
const CASES: readonly Case[] = [
  ...[
    zkCycle,
    zkContended,
    zkHerd,
    zkParallel,
    zkScale,
    zkWaiters,
    zkPermits,
    etcdCycle,
    etcdReuse,
    etcdHerd,
    etcdParallel,
    etcdScale,
    etcdWaiters,
    etcdPermits,
  ],
  ...[
    postgresCycle,
    postgresContended,
    postgresHerd,
    postgresFence,
    postgresScale,
    redisCycle,
    redisContended,
    redisHerd,
    redisFence,
    mysqlFence,
    redisScale,
    mysqlCycle,
    mysqlContended,
    mysqlHerd,
    mysqlScale,
    memoryCycle,
    memoryHerd,
    memoryWaiters,
    memoryPermits,
  ],
  ...[zkGuarded, etcdGuarded, postgresGuarded, redisGuarded],
];

const USAGE = `npm run bench [-- --quick] [-- --only <selector>[,<selector>...]] [-- --n 100,1000,10000] [-- --scale-parts waiters,held,sessions] [-- --json results.json]
  --n: the numbers of waiters the scale cases run (default 100,1000,10000; 100,1000 with --quick)
  selectors: a backend (zk, etcd, postgres, redis, mysql, memory), a kind of case (${[...new Set(CASES.map((c) => c.name.split('.')[1]))].join(', ')}),
  or a whole case name (${CASES.map((c) => c.name).join(', ')})`;

/**
 * `npm run bench`: starts its own standalone ZooKeeper (forceSync on), etcd and PostgreSQL (fsync on),
 * MariaDB, or uses BATON_BENCH_ZK=host:port, BATON_BENCH_ETCD=http://host:port, BATON_BENCH_POSTGRES=postgres://...
 * and BATON_BENCH_MYSQL=mysql://..., prints every figure next to a peer
 * or the raw floor measured in the same run, then one summary table of the targets.
 */
async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2));
  const servers = new Servers();
  const context: Context = {
    quick: args.quick,
    scaleN: args.n ?? (args.quick ? [100, 1_000] : [100, 1_000, 10_000]),
    scaleParts: new Set(args.scaleParts ?? SCALE_PARTS),
    size: args.quick ? { blocks: 4, perBlock: 100, warmup: 200 } : { blocks: 10, perBlock: 300, warmup: WARMUP_CYCLES },
    zk: () => servers.zk(),
    etcd: () => servers.etcd(),
    postgres: () => servers.postgres(),
    redis: () => servers.redis(),
    mysql: () => servers.mysql(),
    serverPid: (server) => servers.pids[server],
    report: new Report(),
    figures: new Map<string, Summary>(),
  };
  const results: Record<string, unknown> = {};
  const startedAt = new Date();
  const load = sampleLoad();
  try {
    for (const benchCase of CASES.filter((c) => selected(c.name, args.only)))
      results[benchCase.name] = await benchCase.run(context);
  } finally {
    await servers.stop();
    load.stop();
  }
  printSummary(context.report);
  process.stdout.write(`load average (1 min) during the run: ${load.describe()} (the run itself adds to it)\n`);
  if (args.json !== undefined) {
    const run = {
      startedAt: startedAt.toISOString(),
      seconds: (Date.now() - startedAt.getTime()) / 1000,
      machine: machineFacts(),
      options: args,
      loadAverage: load.samples,
    };
    writeFileSync(args.json, `${JSON.stringify({ run, summary: context.report.checks, cases: results }, null, 2)}\n`);
    process.stdout.write(`\nwrote ${args.json}\n`);
  }
}

interface Args {
  readonly quick: boolean;
  readonly only: readonly string[] | undefined;
  readonly json: string | undefined;
  readonly n: readonly number[] | undefined;
  readonly scaleParts: readonly ScalePart[] | undefined;
}

const SCALE_PARTS = ['waiters', 'held', 'sessions'] as const;
type ScalePart = (typeof SCALE_PARTS)[number];

function parseArgs(args: readonly string[]): Args {
  const value = (flag: string): string | undefined => {
    const at = args.indexOf(flag);
    if (at < 0) return undefined;
    const given = args[at + 1];
    if (given === undefined || given.startsWith('--')) throw new Error(`${flag} needs a value\n${USAGE}`);
    return given;
  };
  for (const arg of args)
    if (arg.startsWith('--') && !['--quick', '--only', '--json', '--n', '--scale-parts'].includes(arg))
      throw new Error(`unknown option ${arg}\n${USAGE}`);
  const only = value('--only')?.split(',');
  for (const selector of only ?? [])
    if (!CASES.some((c) => selected(c.name, [selector])))
      throw new Error(`--only ${selector} selects nothing\n${USAGE}`);
  const n = value('--n')?.split(',').map(Number);
  if (n?.some((count) => !Number.isInteger(count) || count < 1) === true)
    throw new Error(`--n takes whole numbers of waiters, such as 100,1000\n${USAGE}`);
  const scaleParts = value('--scale-parts')?.split(',');
  for (const part of scaleParts ?? [])
    if (!(SCALE_PARTS as readonly string[]).includes(part)) throw new Error(`--scale-parts: no part ${part}\n${USAGE}`);
  return {
    quick: args.includes('--quick'),
    only,
    json: value('--json'),
    n,
    scaleParts: scaleParts as ScalePart[] | undefined,
  };
}

/** `zk.herd` is selected by `zk`, by `herd` and by `zk.herd`. */
function selected(name: string, only: readonly string[] | undefined): boolean {
  if (only === undefined) return true;
  const [backend, kind] = name.split('.');
  return only.some((selector) => selector === name || selector === backend || selector === kind);
}

/**
 * The 1-minute load average every 10 s: the machine is shared, and a reader of the figures should know
 * how busy it was while they were taken.
 */
function sampleLoad(): { samples: number[]; stop(): void; describe(): string } {
  const samples = [os.loadavg()[0]!];
  const timer = setInterval(() => samples.push(os.loadavg()[0]!), 10_000);
  timer.unref();
  return {
    samples,
    stop: () => {
      clearInterval(timer);
      samples.push(os.loadavg()[0]!);
    },
    describe: () =>
      `start ${samples[0]!.toFixed(2)}, min ${Math.min(...samples).toFixed(2)}, max ${Math.max(...samples).toFixed(2)}, end ${samples.at(-1)!.toFixed(2)}`,
  };
}

function machineFacts(): Record<string, unknown> {
  return {
    summary: machine(),
    cpus: os.cpus().length,
    memoryBytes: os.totalmem(),
    loadAverage: os.loadavg(),
    platform: `${os.type()} ${os.release()}`,
    node: process.version,
  };
}

main()
  .catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  })
  // A run whose sessions were lost leaves their clients dialling a server that is gone: end it here.
  .finally(() => process.exit());

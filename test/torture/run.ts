import { writeFileSync } from 'node:fs';

import { Command, InvalidArgumentError, Option } from 'commander';

import { describeSummary, torture, type TortureBackend } from '../harness/faults/torture-run.js';
import { ensureServersInstalled } from '../harness/servers/install.js';

/**
 * `npm run torture -- --backend zk|etcd|postgres|redis|redis-cluster|mysql --minutes N`: the contended workload
 * under random faults against a layout of its own (3 nodes; one server for PostgreSQL; one primary with
 * appendfsync always for Redis; 3 masters without replicas, each with appendfsync always, for a Redis
 * Cluster; one MariaDB server writing its log at every commit); prints one summary and exits non-zero if anything was wrong.
 */
function number(what: string, min: number, max: number, integer: boolean) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < min || parsed > max || (integer && !Number.isInteger(parsed))) {
      throw new InvalidArgumentError(
        `${what} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got "${value}"`,
      );
    }
    return parsed;
  };
}

const program = new Command('torture')
  .description(
    'Contend on one lock from several processes under random faults (member kills or server restarts, partitions, short disconnects, server-side expiries, terminated backends or KILLed connections) and check mutual exclusion and fencing. On a Redis Cluster the contender faults are server-side expiries only (its client finds the nodes itself, past any proxy).',
  )
  .addOption(
    new Option(
      '--backend <backend>',
      'the layout to start: a 3-node ZooKeeper ensemble or etcd cluster, one PostgreSQL server, one Redis primary, a Redis Cluster of 3 masters, or one MariaDB server',
    )
      .choices(['zk', 'etcd', 'postgres', 'redis', 'redis-cluster', 'mysql'])
      .makeOptionMandatory(),
  )
  .option('--minutes <n>', 'how long to inject faults', number('--minutes', 0.1, 24 * 60, false), 1)
  .option('--workers <n>', 'contending processes', number('--workers', 2, 32, true), 8)
  .option('--seed <n>', 'seed of the fault schedule (default: random, printed)', number('--seed', 0, 2 ** 31 - 1, true))
  .option(
    '--timeout <ms>',
    'ZooKeeper session timeout / etcd lease TTL (whole seconds on etcd) / PostgreSQL or MySQL lease / Redis session key expiry',
    number('--timeout', 2_000, 60_000, true),
    4_000,
  )
  .option('--json <file>', 'also write the summary as JSON to this file')
  .option('--quiet', 'do not print each fault as it is injected');

program.parse();
const opts = program.opts<{
  backend: TortureBackend;
  minutes: number;
  workers: number;
  seed?: number;
  timeout: number;
  json?: string;
  quiet?: boolean;
}>();

await ensureServersInstalled();
const summary = await torture({
  backend: opts.backend,
  durationMs: Math.round(opts.minutes * 60_000),
  workers: opts.workers,
  timeoutMs: opts.timeout,
  ...(opts.seed === undefined ? {} : { seed: opts.seed }),
  ...(opts.quiet ? {} : { log: (line: string) => console.log(line) }),
}).catch((error: unknown) => {
  // The servers are stopped by now (torture's own cleanup); say why there is no summary.
  console.error(`torture: the run could not finish: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(2);
});
console.log(describeSummary(summary));
if (opts.json !== undefined) writeFileSync(opts.json, `${JSON.stringify(summary, null, 2)}\n`);
process.exit(summary.ok ? 0 : 1);

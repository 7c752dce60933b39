import { writeFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { ensureServersInstalled } from '../harness/install.js';
import { describeSummary, torture, type TortureBackend } from '../support/faults/torture-run.js';

/**
 * `npm run torture -- --backend zk|etcd|redis --minutes N`: the contended workload under random faults
 * against a 3-node layout of its own (Redis: one primary with appendfsync always); prints one summary and exits non-zero if anything was wrong.
 */
function number(what: string, min: number, max: number, integer: boolean) {
  return (value: string): number => {
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < min || parsed > max || (integer && !Number.isInteger(parsed))) {
      throw new InvalidArgumentError(`${what} must be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got "${value}"`);
    }
    return parsed;
  };
}

const program = new Command('torture')
  .description('Contend on one lock from several processes under random faults (member kills, partitions, short disconnects, server-side expiries) and check mutual exclusion and fencing.')
  .addOption(new Option('--backend <backend>', 'the 3-node layout to start').choices(['zk', 'etcd', 'redis']).makeOptionMandatory())
  .option('--minutes <n>', 'how long to inject faults', number('--minutes', 0.1, 24 * 60, false), 1)
  .option('--workers <n>', 'contending processes', number('--workers', 2, 32, true), 8)
  .option('--seed <n>', 'seed of the fault schedule (default: random, printed)', number('--seed', 0, 2 ** 31 - 1, true))
  .option('--timeout <ms>', 'ZooKeeper session timeout / etcd lease TTL (whole seconds on etcd) / Redis session key expiry', number('--timeout', 2_000, 60_000, true), 4_000)
  .option('--json <file>', 'also write the summary as JSON to this file')
  .option('--quiet', 'do not print each fault as it is injected');

program.parse();
const opts = program.opts<{ backend: TortureBackend; minutes: number; workers: number; seed?: number; timeout: number; json?: string; quiet?: boolean }>();

await ensureServersInstalled();
const summary = await torture({
  backend: opts.backend,
  durationMs: Math.round(opts.minutes * 60_000),
  workers: opts.workers,
  timeoutMs: opts.timeout,
  ...(opts.seed === undefined ? {} : { seed: opts.seed }),
  ...(opts.quiet ? {} : { log: (line: string) => console.log(line) }),
});
console.log(describeSummary(summary));
if (opts.json !== undefined) writeFileSync(opts.json, `${JSON.stringify(summary, null, 2)}\n`);
process.exit(summary.ok ? 0 : 1);

#!/usr/bin/env node
import { Command, InvalidArgumentError as CommanderArgumentError } from 'commander';
import { runDemo } from './demo.js';

function positiveInt(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > 1000) throw new CommanderArgumentError('a whole number from 1 to 1000');
  return parsed;
}

const program = new Command('baton').description('Coordination recipes on ZooKeeper, etcd and memory');

program
  .command('demo')
  .description('run a settlement scheduler: workers take a fair mutex in turn and write to a fenced ledger')
  .option('--backend <url>', 'connection URL, e.g. zk://127.0.0.1:2181/demo', 'memory://demo')
  .option('--workers <n>', 'number of workers, each with its own session', positiveInt, 5)
  .option('--rounds <n>', 'settlement rounds per worker', positiveInt, 4)
  .action(async (options: { backend: string; workers: number; rounds: number }) => {
    await runDemo({ url: options.backend, workers: options.workers, rounds: options.rounds, write: (line) => process.stdout.write(line) });
  });

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`baton: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});

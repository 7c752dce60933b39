import type { Command } from 'commander';

import { LockLostError } from '../../recipes/errors.js';
import { type OnceFailurePolicy, runOnce } from '../../recipes/once.js';
import { validateName } from '../../recipes/validate.js';
import { URL_HELP } from './backend-help.js';
import { type CliHelpers, milliseconds, openSession, type SessionFlags } from './common.js';
import { periodMs } from './duration.js';
import { EXIT, UsageError } from './exit-status.js';
import { actionUnderLock, runCommand, runUnderHold } from './run.js';

/** The options of `baton once`, as commander parses them. */
export interface OnceFlags extends SessionFlags {
  readonly period: number;
  readonly onFailure: string;
  readonly timeout?: number;
}

/** The command ran under the lock and did not succeed (or was stopped): the period is not recorded as done. */
class CommandEnded extends Error {
  constructor(readonly status: number) {
    super(`the command exited with ${status}`);
  }
}

/** Registers `baton once <url> <job> --period P [options] -- <command> [args...]`. */
export function registerOnce(program: Command, helpers: CliHelpers): void {
  const command = program
    .command('once')
    .description(
      'run a command at most once per period across every node that calls this for the job; the others skip (exit 80)',
    )
    .argument('<url>', URL_HELP)
    .argument('<job>', 'the job name (its lock), e.g. reports/end-of-day')
    .argument('<command...>', 'the command and its arguments, after --')
    .requiredOption(
      '--period <duration>',
      'the period: milliseconds, or an ISO 8601 duration (P1D, PT1H, PT30S); aligned on the epoch, in UTC',
      periodMs,
    )
    .option(
      '--on-failure <policy>',
      'retry: a failed run is run again by the next node this period; skip: not',
      'retry',
    )
    .option(
      '--timeout <ms>',
      'give up waiting for the job lock after this many milliseconds (exit 124)',
      milliseconds(0),
    );
  actionUnderLock(command, helpers, runOnceCommand);
}

/** `baton once`: 0 when it ran and recorded the period, 80 when already done (see exit-status.ts). */
export function runOnceCommand(
  url: string,
  job: string,
  argv: readonly string[],
  flags: OnceFlags,
  helpers: CliHelpers,
): Promise<number> {
  return runCommand(async (run) => {
    validateName(job);
    const onFailure = checkPolicy(flags.onFailure);
    const session = (run.session = await openSession(url, flags, helpers, run.relay));
    const options = {
      period: flags.period,
      onFailure,
      signal: run.relay.signal,
      ...(flags.timeout === undefined ? {} : { timeoutMs: flags.timeout }),
    };
    try {
      const result = await runOnce(session, job, options, async ({ period, lock }) => {
        const env = { BATON_PERIOD: period.name };
        const outcome = await runUnderHold(argv, lock, session, flags.grace, run.relay, env);
        if (outcome.lost) throw new CommandEnded(EXIT.lost);
        if (outcome.status !== 0) throw new CommandEnded(outcome.status);
      });
      if (result.outcome === 'ran') return 0;
      process.stderr.write(`baton: "${job}" ${result.period.name}: already ${result.record.state}, skipped\n`);
      return EXIT.skipped;
    } catch (error) {
      if (error instanceof CommandEnded) return error.status;
      if (error instanceof LockLostError) {
        process.stderr.write(`baton: ${error.message}; the period was not recorded\n`);
        return EXIT.lost;
      }
      throw error;
    }
  });
}

function checkPolicy(value: string): OnceFailurePolicy {
  if (value !== 'retry' && value !== 'skip')
    throw new UsageError(`--on-failure must be retry or skip, not ${JSON.stringify(value)}`);
  return value;
}

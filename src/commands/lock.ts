import type { Command } from 'commander';

import type { Session } from '../../recipes/contract.js';
import type { LockHandle } from '../../recipes/handle.js';
import { FairMutex } from '../../recipes/mutex.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import { Semaphore } from '../../recipes/semaphore.js';
import { validateName } from '../../recipes/validate.js';
import { URL_HELP } from './backend-help.js';
import { type CliHelpers, milliseconds, openSession, type SessionFlags, wholeNumber } from './common.js';
import { EXIT, UsageError } from './exit-status.js';
import { actionUnderLock, runCommand, runUnderHold } from './run.js';

/** The options of `baton lock`, as commander parses them. */
export interface LockFlags extends SessionFlags {
  readonly timeout?: number;
  readonly try: boolean;
  readonly kind?: string;
  readonly permits?: number;
  readonly count?: number;
}

/** Registers `baton lock <url> <name> [options] -- <command> [args...]`. */
export function registerLock(program: Command, helpers: CliHelpers): void {
  const command = program
    .command('lock')
    .description(
      'run a command while holding a lock (a fair mutex; a read or write lock with --kind; permits of a semaphore with --permits); released when it exits',
    )
    .argument('<url>', URL_HELP)
    .argument('<name>', 'the lock name, e.g. reports/end-of-day')
    .argument('<command...>', 'the command and its arguments, after --')
    .option('--timeout <ms>', 'give up waiting for the lock after this many milliseconds (exit 124)', milliseconds(0))
    .option('--try', 'do not wait: exit 75 at once if the lock is busy', false)
    .option('--kind <kind>', 'read or write: take that half of a read/write lock')
    .option(
      '--permits <n>',
      'take permits of a semaphore of n permits (every user of the name gives the same n)',
      wholeNumber,
    )
    .option('--count <k>', 'how many permits to take (with --permits; default 1)', wholeNumber);
  actionUnderLock(command, helpers, runLock);
}

/** `baton lock`: the exit status (see exit-status.ts). */
export async function runLock(
  url: string,
  name: string,
  argv: readonly string[],
  flags: LockFlags,
  helpers: CliHelpers,
): Promise<number> {
  return runCommand(async (run) => {
    const take = checkLockFlags(validateName(name), flags);
    const session = (run.session = await openSession(url, flags, helpers, run.relay));
    const lock = await take(session, run.relay.signal);
    if (lock === null) {
      process.stderr.write(`baton: "${name}" is busy\n`);
      return EXIT.busy;
    }
    try {
      const outcome = await runUnderHold(argv, lock, session, flags.grace, run.relay);
      return outcome.lost ? EXIT.lost : outcome.status;
    } finally {
      await lock.release().catch(() => undefined);
    }
  });
}

type Take = (session: Session, signal: AbortSignal) => Promise<LockHandle | null>;

/** Checks the combination of options (exit 64 before connecting) and says how to take the lock. */
function checkLockFlags(name: string, flags: LockFlags): Take {
  if (flags.try && flags.timeout !== undefined) throw new UsageError('--try and --timeout exclude each other');
  if (flags.count !== undefined && flags.permits === undefined) throw new UsageError('--count needs --permits');
  if (flags.kind !== undefined && flags.permits !== undefined)
    throw new UsageError('--kind and --permits exclude each other');
  if (flags.kind !== undefined && flags.kind !== 'read' && flags.kind !== 'write')
    throw new UsageError(`--kind must be read or write, not ${JSON.stringify(flags.kind)}`);
  const wait = (signal: AbortSignal) => ({
    signal,
    ...(flags.timeout === undefined ? {} : { timeoutMs: flags.timeout }),
  });
  const { permits, count, kind } = flags;
  if (permits !== undefined) {
    if (count !== undefined && count > permits)
      throw new UsageError(`--count ${count} is more than --permits ${permits}`);
    return (session, signal) => {
      const semaphore = new Semaphore(session, name, { permits });
      return flags.try
        ? semaphore.tryAcquire({ count: count ?? 1 })
        : semaphore.acquire({ count: count ?? 1, ...wait(signal) });
    };
  }
  return (session, signal) => {
    const lock =
      kind === undefined
        ? new FairMutex(session, name)
        : new ReadWriteLock(session, name)[kind === 'read' ? 'readLock' : 'writeLock'];
    return flags.try ? lock.tryAcquire() : lock.acquire(wait(signal));
  };
}

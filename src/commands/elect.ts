import type { Command } from 'commander';

import type { Session } from '../../recipes/contract.js';
import { LeaderElection } from '../../recipes/election.js';
import { SessionLostError } from '../../recipes/errors.js';
import { validateName } from '../../recipes/validate.js';
import { URL_HELP } from './backend-help.js';
import { type CliHelpers, closeQuietly, openSession, type SessionFlags } from './common.js';
import { EXIT } from './exit-status.js';
import { actionUnderLock, runCommand, runUnderHold } from './run.js';
import type { SignalRelay } from './signals.js';

/** The options of `baton elect`, as commander parses them. */
export interface ElectFlags extends SessionFlags {
  readonly id: string;
  readonly forever: boolean;
}

/** Back-off between terms with `--forever`: from 1 s, doubling to 30 s; back to 1 s after a term of a minute. */
const FIRST_BACKOFF_MS = 1_000;
const MAX_BACKOFF_MS = 30_000;
const LONG_TERM_MS = 60_000;

/** Registers `baton elect <url> <name> --id ID [--forever] -- <command> [args...]`. */
export function registerElect(program: Command, helpers: CliHelpers): void {
  const command = program
    .command('elect')
    .description('campaign for leadership and run a command while leader; with --forever campaign again after it ends')
    .argument('<url>', URL_HELP)
    .argument('<name>', 'the election name, e.g. scheduler/leader')
    .argument('<command...>', 'the command and its arguments, after --')
    .requiredOption('--id <id>', "this candidate's id (what `baton inspect` and leader() show)")
    .option(
      '--forever',
      'after the command ends, campaign again (with a back-off of 1 s to 30 s), until interrupted',
      false,
    );
  actionUnderLock(command, helpers, runElect);
}

/** `baton elect`: the exit status of the last term (see exit-status.ts). */
export async function runElect(
  url: string,
  name: string,
  argv: readonly string[],
  flags: ElectFlags,
  helpers: CliHelpers,
): Promise<number> {
  return runCommand(async (run) => {
    const { relay } = run;
    validateName(name);
    let session = (run.session = await openSession(url, flags, helpers, relay));
    let backoffMs = FIRST_BACKOFF_MS;
    for (;;) {
      const term = await serveOneTerm(session, name, argv, flags, relay).catch((error: unknown) => {
        // A session lost while campaigning: with --forever, a new session campaigns at the next term.
        if (!flags.forever || relay.received !== undefined || !(error instanceof SessionLostError)) throw error;
        return { status: EXIT.lost, ranMs: 0 };
      });
      if (!flags.forever || relay.received !== undefined) return term.status;
      backoffMs = term.ranMs >= LONG_TERM_MS ? FIRST_BACKOFF_MS : backoffMs;
      await pause(backoffMs, relay.signal);
      backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS);
      session = run.session = await usable(session, url, flags, helpers, relay);
    }
  });
}

/** One campaign and, once elected, one run of the command; its status (125 if leadership was lost). */
async function serveOneTerm(
  session: Session,
  name: string,
  argv: readonly string[],
  flags: ElectFlags,
  relay: SignalRelay,
): Promise<{ status: number; ranMs: number }> {
  const leadership = await new LeaderElection(session, name, { id: flags.id }).campaign({ signal: relay.signal });
  try {
    const env = { BATON_LEADER_ID: flags.id };
    const outcome = await runUnderHold(argv, leadership, session, flags.grace, relay, env);
    return { status: outcome.lost ? EXIT.lost : outcome.status, ranMs: outcome.ranMs };
  } finally {
    await leadership.resign().catch(() => undefined);
  }
}

/** The session again, or a new one once it was lost (retried at the next term while the server is away). */
async function usable(
  session: Session,
  url: string,
  flags: ElectFlags,
  helpers: CliHelpers,
  relay: SignalRelay,
): Promise<Session> {
  if (session.state !== 'lost' && session.state !== 'closed') return session;
  await closeQuietly(session);
  for (let backoffMs = FIRST_BACKOFF_MS; ; backoffMs = Math.min(backoffMs * 2, MAX_BACKOFF_MS)) {
    try {
      return await openSession(url, flags, helpers, relay);
    } catch (error) {
      if (relay.received !== undefined) throw error;
      process.stderr.write(`baton: ${error instanceof Error ? error.message : String(error)}; trying again\n`);
      await pause(backoffMs, relay.signal);
    }
  }
}

/** Waits `ms`, or rejects at the first signal. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

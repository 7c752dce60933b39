import type { Command } from 'commander';

import type { Session } from '../../recipes/contract.js';
import { type HeldFor, type RunOutcome, runWhileHeld } from './child.js';
import { type CliHelpers, closeQuietly, exitWith, holdEnvironment, statusOf, withSessionOptions } from './common.js';
import { SignalRelay } from './signals.js';

/** What a command's body works with: the signal relay, and the session it opened (closed at the end). */
export interface CommandRun {
  readonly relay: SignalRelay;
  /** The session to close when the command ends; a body that opens a new one puts it here. */
  session: Session | undefined;
}

/** A command run under a lock: `baton <command> <url> <name> [options] -- <command> [args...]`. */
export type RunUnderLock<F> = (
  url: string,
  name: string,
  argv: readonly string[],
  flags: F,
  helpers: CliHelpers,
) => Promise<number>;

/** Adds the session options to `command` and runs `run` as its action, exiting with its status. */
export function actionUnderLock<F>(command: Command, helpers: CliHelpers, run: RunUnderLock<F>): void {
  withSessionOptions(command).action(async (url: string, name: string, argv: string[], flags: F) => {
    exitWith(await run(url, name, argv, flags, helpers));
  });
}

/**
 * Runs `body` with a signal relay installed and turns whatever it throws into the documented exit
 * status; afterwards the relay is removed and the session closed, bounded in time.
 */
export async function runCommand(body: (run: CommandRun) => Promise<number>): Promise<number> {
  const run: CommandRun = { relay: new SignalRelay(), session: undefined };
  try {
    return await body(run);
  } catch (error) {
    return statusOf(error, run.relay);
  } finally {
    run.relay.dispose();
    await closeQuietly(run.session);
  }
}

/** What a command runs under (a lock's handle, a leadership): its name, its token and its loss signal. */
export interface Hold extends HeldFor {
  readonly name: string;
  readonly fencingToken: bigint;
}

/**
 * Runs the command of `argv` (`<command> [args...]`) while `hold` lasts, its environment telling it the
 * hold, with `env` (a command's own variables) added. Not started when a signal came as the grant did.
 */
export async function runUnderHold(
  argv: readonly string[],
  hold: Hold,
  session: Session,
  graceMs: number,
  relay: SignalRelay,
  env: Readonly<Record<string, string>> = {},
): Promise<RunOutcome> {
  relay.signal.throwIfAborted();
  const [command, ...args] = argv;
  const spec = {
    command: command!,
    args,
    env: { ...holdEnvironment(hold.name, session, hold.fencingToken), ...env },
    graceMs,
  };
  return runWhileHeld(spec, hold, relay);
}

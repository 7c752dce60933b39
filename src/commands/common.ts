import { type Command, InvalidArgumentError as CommanderArgumentError, Option } from 'commander';

import type { Session } from '../../recipes/contract.js';
import { InvalidArgumentError, InvalidNameError, LockTimeoutError } from '../../recipes/errors.js';
import { MAX_TIMEOUT_MS } from '../../recipes/validate.js';
import { connect, type ConnectOptions } from '../connect.js';
import { CREDENTIALS_LINE } from './backend-help.js';
import { EXIT, UsageError } from './exit-status.js';
import { type SignalRelay, signalStatus } from './signals.js';

/** What cli.ts hands the commands: credentials from the environment, and the password warning. */
export interface CliHelpers {
  credentials(env: NodeJS.ProcessEnv, url: string): ConnectOptions;
  warnPasswordInArguments(url: string): void;
}

/** The options `baton lock` and `baton elect` share. */
export interface SessionFlags {
  readonly connectTimeout: number;
  readonly sessionTimeout?: number;
  readonly grace: number;
}

export const CREDENTIALS_HELP = `\n${CREDENTIALS_LINE}\nExit status: the command's (128+n if signal n ended it); 64 bad usage, 66 no such entry (release), 69 server unreachable or backend failure, 75 busy (--try), 80 period already done (once), 124 timed out, 125 lost while the command ran, 126/127 command not runnable/not found.`;

/** A whole number of milliseconds from `min` to setTimeout's limit. */
export function milliseconds(min: number): (value: string) => number {
  return (value) => {
    const parsed = Number(value);
    if (!Number.isInteger(parsed) || parsed < min || parsed > MAX_TIMEOUT_MS)
      throw new CommanderArgumentError(`a whole number of milliseconds from ${min} to ${MAX_TIMEOUT_MS}`);
    return parsed;
  };
}

/** A whole number from 1 up. */
export function wholeNumber(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > 2_147_483_647)
    throw new CommanderArgumentError('a whole number from 1 to 2147483647');
  return parsed;
}

/** The connection and stop options both commands take, and exit status 64 for any usage mistake. */
export function withSessionOptions(command: Command): Command {
  return command
    .option('--connect-timeout <ms>', 'give up connecting after this many milliseconds', milliseconds(1), 5_000)
    .addOption(
      new Option('--session-timeout <ms>', 'the session timeout (etcd: lease TTL) to ask the server for').argParser(
        milliseconds(1),
      ),
    )
    .option(
      '--grace <ms>',
      'after a loss, how long the command gets between SIGTERM and SIGKILL',
      milliseconds(0),
      10_000,
    )
    .addHelpText('after', CREDENTIALS_HELP)
    .exitOverride((error) => {
      // Help and version exit 0; every parse mistake exits 64 (commander has printed it already).
      if (error.exitCode !== 0) process.exit(EXIT.usage);
      process.exit(0);
    });
}

/** Opens the session, giving up at the first signal; its failure is the command's (exit 69). */
export async function openSession(
  url: string,
  flags: SessionFlags,
  helpers: CliHelpers,
  relay: SignalRelay,
): Promise<Session> {
  helpers.warnPasswordInArguments(url);
  return connect(url, {
    ...helpers.credentials(process.env, url),
    connectTimeoutMs: flags.connectTimeout,
    ...(flags.sessionTimeout === undefined ? {} : { sessionTimeoutMs: flags.sessionTimeout }),
    signal: relay.signal,
  });
}

/** What the command is told of its hold, in its environment. */
export function holdEnvironment(name: string, session: Session, fencingToken: bigint): Record<string, string> {
  return { BATON_FENCING_TOKEN: fencingToken.toString(), BATON_LOCK_NAME: name, BATON_SESSION: session.id };
}

/** The exit status for an error before the command ran, told on stderr. */
export function statusOf(error: unknown, relay: SignalRelay): number {
  const received = relay.received;
  if (received !== undefined) return signalStatus(received);
  process.stderr.write(`baton: ${error instanceof Error ? error.message : String(error)}\n`);
  if (error instanceof UsageError || error instanceof InvalidNameError || error instanceof InvalidArgumentError)
    return EXIT.usage;
  if (error instanceof LockTimeoutError) return EXIT.timeout;
  return EXIT.unavailable;
}

/** Closes the session, bounded in time: a server that does not answer must not keep baton from exiting. */
export async function closeQuietly(session: Session | undefined): Promise<void> {
  if (session === undefined) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    session.close().catch(() => undefined),
    new Promise((resolve) => (timer = setTimeout(resolve, 5_000))),
  ]);
  clearTimeout(timer);
}

/** Ends baton with `status`, even if some client still holds the event loop open. */
export function exitWith(status: number): void {
  process.exitCode = status;
  setTimeout(() => process.exit(status), 1_000).unref();
}

/**
 * The exit statuses of `baton lock`, `elect`, `once` and `release` (docs/cli.md), chosen apart from what a command
 * usually exits with: the sysexits codes for usage, a missing entry, an unreachable server and a busy
 * lock; 80 (outside sysexits and the shells' range) for a period already done; 124 for a
 * timeout as timeout(1) has it; 126 and 127 as shells have them. Otherwise baton exits with the
 * command's own status, or 128 + the signal's number when a signal ended it.
 */
export const EXIT = {
  /** EX_USAGE: bad options or arguments; nothing was done. */
  usage: 64,
  /** EX_UNAVAILABLE: the server could not be reached, or the backend failed before the command ran. */
  unavailable: 69,
  /** EX_NOINPUT, as `baton release` uses it: no such entry in the queue; nothing was removed. */
  noEntry: 66,
  /** EX_TEMPFAIL: `--try` found the lock busy (`flock -n` exits 1). */
  busy: 75,
  /** `baton once`: the period was already done (or claimed) by a node; the command did not run. */
  skipped: 80,
  /** `--timeout` passed before the lock was granted (timeout(1)'s status). */
  timeout: 124,
  /** The lock or leadership was lost while the command ran: the command was stopped. */
  lost: 125,
  /** The command could not be executed (permission denied). */
  cannotRun: 126,
  /** The command was not found. */
  notFound: 127,
} as const;

/** A command-line mistake: reported with its message, exit status 64. */
export class UsageError extends Error {
  override get name(): string {
    return 'UsageError';
  }
}

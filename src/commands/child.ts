import { spawn } from 'node:child_process';

import { EXIT } from './exit-status.js';
import { type SignalRelay, signalStatus } from './signals.js';

/** What runs under a lock: the command, its arguments and what is added to its environment. */
export interface ChildSpec {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  /** After a loss, how long the command gets between SIGTERM and SIGKILL. */
  readonly graceMs: number;
}

/** What a hold gives the command: its loss signal. */
export interface HeldFor {
  readonly signal: AbortSignal;
}

/** How a run under a hold ended: the command's status, and whether the hold was lost meanwhile. */
export interface RunOutcome {
  readonly status: number;
  readonly lost: boolean;
  readonly ranMs: number;
}

/**
 * Runs the command while `held` lasts: signals baton receives go to it, and when the hold is lost it
 * gets SIGTERM at once and SIGKILL after `graceMs`. Resolves once the command has exited, with its
 * status (128 + n for a signal, 126 or 127 if it could not be started).
 */
export function runWhileHeld(spec: ChildSpec, held: HeldFor, relay: SignalRelay): Promise<RunOutcome> {
  const startedAt = performance.now();
  return new Promise((resolve) => {
    const child = spawn(spec.command, spec.args, { stdio: 'inherit', env: { ...process.env, ...spec.env } });
    let lost = false;
    let killer: NodeJS.Timeout | undefined;
    const onLoss = (): void => {
      lost = true;
      const reason: unknown = held.signal.reason;
      process.stderr.write(
        `baton: ${reason instanceof Error ? reason.message : 'the lock was lost'}; stopping the command\n`,
      );
      child.kill('SIGTERM');
      killer = setTimeout(() => child.kill('SIGKILL'), spec.graceMs);
    };
    const finish = (status: number): void => {
      clearTimeout(killer);
      held.signal.removeEventListener('abort', onLoss);
      relay.route(undefined);
      resolve({ status, lost, ranMs: performance.now() - startedAt });
    };
    relay.route((signal) => child.kill(signal));
    if (held.signal.aborted) onLoss();
    else held.signal.addEventListener('abort', onLoss, { once: true });
    child.once('error', (error: NodeJS.ErrnoException) => {
      // Only a spawn that failed ends the run here; a failed kill leaves the command to its exit.
      if (child.pid !== undefined) return;
      process.stderr.write(`baton: cannot run ${JSON.stringify(spec.command)}: ${error.message}\n`);
      finish(error.code === 'ENOENT' ? EXIT.notFound : EXIT.cannotRun);
    });
    child.once('exit', (code, signal) => finish(signal === null ? (code ?? 0) : signalStatus(signal)));
  });
}

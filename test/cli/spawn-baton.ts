import { type ChildProcess, spawn } from 'node:child_process';

import { batonCommand } from '../harness/run-cli.js';

/** A `baton` process (`batonCommand`'s), with what it printed and how it ended. */
export interface RunningBaton {
  readonly process: ChildProcess;
  /** stdout so far (the command's, which inherits baton's). */
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves once `text` appeared on stdout; rejects after `timeoutMs` naming what was printed. */
  printed(text: string, timeoutMs?: number): Promise<void>;
  /** The exit status (128 + n if a signal ended baton itself); killed by its PID after `timeoutMs`. */
  exited(timeoutMs?: number): Promise<number>;
}

const running = new Set<ChildProcess>();

/** Starts `baton args...` with `env` added; every process is killed by its PID by `killAllBatons`. */
export function startBaton(args: readonly string[], env: Record<string, string> = {}): RunningBaton {
  const child = spawn(process.execPath, [...batonCommand(), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exit = new Promise<number>((resolve) =>
    child.once('exit', (code, signal) => {
      running.delete(child);
      resolve(signal === null ? (code ?? 0) : 128 + (signalNumbers[signal] ?? 0));
    }),
  );
  return {
    process: child,
    stdout: () => out,
    stderr: () => err,
    async printed(text, timeoutMs = 20_000) {
      const started = Date.now();
      while (!out.includes(text)) {
        if (Date.now() - started > timeoutMs || child.exitCode !== null)
          throw new Error(
            `baton did not print ${JSON.stringify(text)}: stdout ${JSON.stringify(out)}, stderr ${JSON.stringify(err)}`,
          );
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    },
    async exited(timeoutMs = 30_000) {
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      try {
        return await exit;
      } finally {
        clearTimeout(timer);
      }
    },
  };
}

const signalNumbers: Partial<Record<NodeJS.Signals, number>> = {
  SIGHUP: 1,
  SIGINT: 2,
  SIGQUIT: 3,
  SIGKILL: 9,
  SIGTERM: 15,
};

/** Kills, by PID, every baton a test left running (for `afterEach`). */
export function killAllBatons(): void {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
}

/** Runs baton to its end: the exit status and output. */
export async function runToEnd(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const baton = startBaton(args, env);
  const code = await baton.exited();
  return { code, stdout: baton.stdout(), stderr: baton.stderr() };
}

/** Whether a process with this PID still exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

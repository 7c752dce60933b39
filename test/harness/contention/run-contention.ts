import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

import type { ConnectOptions } from '../../../src/connect.js';
import { childScript } from '../compiled.js';
import { contend, type ContendMessage, ExclusionChecker, type Mode } from './exclusion-contender.js';

const WORKER = fileURLToPath(new URL('../workers/exclusion-worker.ts', import.meta.url));

/** Runs `workers` contenders, each in its own process (or, for memory://, its own session). */
export async function runContention(opts: {
  url: string;
  options: ConnectOptions;
  mode?: Mode;
  name: string;
  workers: number;
  count: number;
  crossProcess: boolean;
}): Promise<ExclusionChecker> {
  const checker = new ExclusionChecker();
  const runs = Array.from({ length: opts.workers }, (_, worker) =>
    opts.crossProcess ? inChild(opts, worker, checker) : inProcess(opts, worker, checker),
  );
  await Promise.all(runs);
  return checker;
}

function inProcess(
  opts: Parameters<typeof runContention>[0],
  worker: number,
  checker: ExclusionChecker,
): Promise<void> {
  return contend(opts.url, opts.options, opts.mode ?? 'mutex', opts.name, worker, opts.count, async (message) => {
    await new Promise((resolve) => setImmediate(resolve));
    checker.receive(message);
  });
}

function inChild(opts: Parameters<typeof runContention>[0], worker: number, checker: ExclusionChecker): Promise<void> {
  const args = [
    opts.url,
    opts.mode ?? 'mutex',
    opts.name,
    String(worker),
    String(opts.count),
    JSON.stringify(opts.options),
  ];
  return forkWorker(WORKER, args, `contender ${worker}`, 120_000, (message, child) => {
    checker.receive(message as ContendMessage);
    child.send('ok');
  }).exited;
}

/**
 * Runs a TypeScript worker in its own process with an IPC channel (its compiled copy when the run made
 * one: `childScript`), handing its messages to `onMessage`. `exited` resolves when it exits with 0 and rejects otherwise; after `limitMs` the
 * worker is killed (by its own PID), so a stuck worker cannot hang the test run.
 */
export function forkWorker(
  script: string,
  args: readonly string[],
  label: string,
  limitMs: number,
  onMessage: (message: unknown, child: ChildProcess) => void,
): { child: ChildProcess; exited: Promise<void> } {
  const { script: file, execArgv } = childScript(script);
  const child = fork(file, args, { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  child.on('message', (message) => onMessage(message, child));
  const exited = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), limitMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`${label} exited with ${code ?? signal}`));
    });
  });
  return { child, exited };
}

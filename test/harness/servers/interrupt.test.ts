import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { describe, expect, it } from 'vitest';

import { eventually } from '../wait.js';
import { isAlive } from './process.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const VITEST = path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
const CONFIG = 'test/harness/servers/interrupt/vitest.config.ts';

/**
 * PIDs of live processes whose command line names `dir`, whose working directory is inside it (the
 * servers), or, with `marker`, whose environment holds it (every process of the run: workers too).
 */
function processesIn(dir: string, marker?: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid || !isAlive(Number(entry))) continue;
    const read = (what: string): string => {
      try {
        return what === 'cwd' ? readlinkSync(`/proc/${entry}/cwd`) : readFileSync(`/proc/${entry}/${what}`, 'utf8');
      } catch {
        return ''; // gone meanwhile
      }
    };
    const cwd = read('cwd');
    const named = read('cmdline').includes(dir) || cwd === dir || cwd.startsWith(`${dir}/`);
    if (named || (marker !== undefined && read('environ').includes(marker))) found.push(Number(entry));
  }
  return found;
}

/** A PID with its command line, for a failure's message. */
function described(pid: number): string {
  try {
    return `${pid} ${readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').slice(0, 160)}`;
  } catch {
    return `${pid} (gone)`;
  }
}

function kill(pids: readonly number[]): void {
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // gone already
    }
  }
}

/**
 * A vitest run interrupted while its servers run (those of its global setup in the main process and
 * those a test file started in a worker) stops every server and removes every temp dir. The run gets
 * a temp dir of its own (TMPDIR), so what it leaves is found there and by the processes that name it.
 */
describe('an interrupted run', () => {
  it.concurrent.each(['SIGINT', 'SIGTERM'] as const)(
    '%s to the vitest process stops its servers and removes its temp dirs',
    async (signal) => {
      const tmp = mkdtempSync(path.join(os.tmpdir(), 'baton-interrupt-'));
      chmodSync(tmp, 0o755); // PostgreSQL runs as its own user as root, in a dir of its own in here
      const side = mkdtempSync(path.join(os.tmpdir(), 'baton-interrupt-log-'));
      const ready = path.join(side, 'ready');
      const logFile = path.join(side, 'vitest.log');
      const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('VITEST')));
      const log = openSync(logFile, 'a');
      const child = spawn(process.execPath, [VITEST, 'run', '--config', CONFIG], {
        cwd: ROOT,
        env: { ...env, TMPDIR: tmp, BATON_INTERRUPT_READY: ready },
        stdio: ['ignore', log, log],
      });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      const vitestLog = (): string => (existsSync(logFile) ? readFileSync(logFile, 'utf8').slice(-3_000) : '');
      try {
        await eventually(
          'the servers and the port claim of the run',
          () => (existsSync(ready) && existsSync(`${ready}.claims`)) || child.exitCode !== null,
          150_000,
        );
        expect(existsSync(ready) && existsSync(`${ready}.claims`), vitestLog()).toBe(true);
        const servers = processesIn(tmp);
        // redis and ZooKeeper of the main process, PostgreSQL (and its own processes) and redis of the worker
        expect(servers.length, vitestLog()).toBeGreaterThanOrEqual(4);
        child.kill(signal);
        await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 30_000))]);
        expect(child.exitCode !== null || child.signalCode !== null, 'vitest ended').toBe(true);
        // The workers clean up on their own once their parent is gone: allow them a few seconds.
        const marker = `BATON_INTERRUPT_READY=${ready}`;
        await eventually('no process of the run alive', () => processesIn(tmp, marker).length === 0, 10_000).catch(
          () => undefined,
        );
        expect(processesIn(tmp).map(described), 'server processes of the run still alive').toEqual([]);
        expect(processesIn(tmp, marker).map(described), 'processes of the run still alive').toEqual([]);
        // The harness's dirs (servers, certificates, port claims), and vitest's own (transformed modules).
        expect(readdirSync(tmp), 'temp dirs left by the run').toEqual([]);
      } finally {
        child.kill('SIGKILL');
        kill(processesIn(tmp, `BATON_INTERRUPT_READY=${ready}`));
        rmSync(tmp, { recursive: true, force: true });
        rmSync(side, { recursive: true, force: true });
      }
    },
    240_000,
  );
});

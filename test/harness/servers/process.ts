import { spawn } from 'node:child_process';
import { accessSync, closeSync, constants, mkdtempSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { removePortClaims } from './ports.js';

/** Every server PID this process started: killed on exit and on Ctrl-C so no server outlives a run. */
const started = new Set<number>();
/** The temp dirs of this process's servers (and of their certificates, peers...): removed with them. */
const tempDirs = new Set<string>();
/**
 * Settles when a server of ours has been reaped. /proc shows a killed server's main thread as a zombie
 * while its other threads may still hold its sockets; only once the whole process is gone can it be
 * reaped, and only then is its port free for a restart.
 */
const reaped = new Map<number, Promise<void>>();
let hooked = false;

/** How long an interrupted run waits for its killed servers to go before it removes their dirs. */
const KILL_WAIT_MS = 5_000;

/**
 * Kills every server of this process, waits (blocking: it runs in exit and signal handlers) until they
 * are gone, then removes every temp dir registered with `makeTempDir` and this process's port claims.
 */
function killAllAndClean(): void {
  for (const pid of started) send(pid, 'SIGKILL');
  const deadline = Date.now() + KILL_WAIT_MS;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  while ([...started].some(isAlive) && Date.now() < deadline) Atomics.wait(pause, 0, 0, 20);
  started.clear();
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  tempDirs.clear();
  removePortClaims(); // its 'exit' handler does not run when a signal ends the process
}

/**
 * Cleans up on exit, on SIGINT and SIGTERM, and when a test worker's parent goes away: the main vitest
 * process exits on a signal without stopping its workers, whose servers would otherwise run on until
 * the test at hand ends. After a signal the process ends by that signal again, once nobody else
 * listens for it (vitest's workers make `process.exit` throw while a test runs). Called by whatever
 * leaves something behind to clean: a server, a temp dir, a port claim (ports.ts).
 */
export function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', killAllAndClean);
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      killAllAndClean();
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    });
  }
  if (process.send !== undefined) {
    process.once('disconnect', () => {
      killAllAndClean();
      process.kill(process.pid, 'SIGTERM');
    });
  }
}

/**
 * A new directory `<parent>/<prefix>XXXXXX` (`parent`: the temp dir), removed on exit or interruption
 * unless `removeTempDir` did first.
 */
export function makeTempDir(prefix: string, parent: string = os.tmpdir()): string {
  const dir = mkdtempSync(path.join(parent, prefix));
  removeWithRun(dir);
  return dir;
}

/**
 * Removes `dir`, made by someone else, on exit or interruption as a `makeTempDir` dir is. For vitest's
 * own dir of transformed modules (`TestProject.tmpDir`), which vitest leaves behind after every run
 * (vitest-dev/vitest#11224).
 */
export function removeWithRun(dir: string): void {
  hookExit();
  tempDirs.add(dir);
}

/**
 * A parent for a server's data that lives in memory (`/dev/shm`) where there is one and TMPDIR does not
 * name another place, else the temp dir: for a server that syncs every write to disk and has no
 * switch to stop it (etcd 3.4), as ZooKeeper's forceSync=no and PostgreSQL's fsync=off do for theirs.
 */
export function memoryBackedTempParent(): string {
  if (process.env['TMPDIR']) return os.tmpdir();
  try {
    accessSync(SHARED_MEMORY, constants.W_OK);
    return statSync(SHARED_MEMORY).isDirectory() ? SHARED_MEMORY : os.tmpdir();
  } catch {
    return os.tmpdir();
  }
}

const SHARED_MEMORY = '/dev/shm';

/** Removes a directory made by `makeTempDir` (and what is in it). */
export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
  tempDirs.delete(dir);
}

/**
 * Starts a server with its output in `logFile`; the child never keeps Node's event loop alive. `as`
 * runs it as another OS user (PostgreSQL refuses to run as root): the PID is still the server's own.
 */
export function startServer(
  command: string,
  args: readonly string[],
  logFile: string,
  as?: { uid: number; gid: number },
): number {
  hookExit();
  const log = openSync(logFile, 'a');
  try {
    const child = spawn(command, args, { stdio: ['ignore', log, log], detached: false, ...(as ?? {}) });
    child.unref();
    if (child.pid === undefined) throw new Error(`could not start ${command}`);
    started.add(child.pid);
    // Reaped when it exits, so that it does not linger as a zombie.
    reaped.set(child.pid, new Promise((resolve) => child.once('exit', () => resolve())));
    return child.pid;
  } finally {
    closeSync(log);
  }
}

/** Alive means running: a missing /proc entry or a zombie ('Z') or dead ('X') state is not. */
export function isAlive(pid: number | undefined): boolean {
  if (pid === undefined) return false;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Stops a process we started: the given signal, then SIGKILL after `graceMs`; waits until it is gone. */
export async function stopPid(
  pid: number | undefined,
  signal: NodeJS.Signals = 'SIGTERM',
  graceMs = 5_000,
): Promise<void> {
  if (pid === undefined || !started.has(pid)) return;
  send(pid, signal);
  const deadline = Date.now() + graceMs;
  while (isAlive(pid) && Date.now() < deadline) await sleep(20);
  if (isAlive(pid)) send(pid, 'SIGKILL');
  for (let i = 0; i < 250 && isAlive(pid); i += 1) await sleep(20);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([reaped.get(pid), new Promise((resolve) => (timer = setTimeout(resolve, 5_000)))]);
  clearTimeout(timer);
  reaped.delete(pid);
  started.delete(pid);
}

function send(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The last lines of a server log, for error messages. */
export function tail(file: string, lines = 20): string {
  try {
    return readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

export interface ServerMember {
  readonly dir: string;
  start(): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** A server process of ours: its PID while it runs, liveness from /proc, kill by PID. */
export abstract class ServerProcess {
  pid: number | undefined;

  isAlive(): boolean {
    return isAlive(this.pid);
  }

  /** SIGKILL by default; waits until the process is gone. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    await stopPid(this.pid, signal);
    this.pid = undefined;
  }
}

/** Kills every member and removes their directories. */
export async function stopMembers(members: readonly ServerMember[]): Promise<void> {
  await Promise.all(members.map((m) => m.kill('SIGKILL')));
  for (const m of members) removeTempDir(m.dir);
}

/** Starts the members together (members of a new cluster wait for each other); on failure stops them all. */
export async function startMembers(members: readonly ServerMember[]): Promise<void> {
  try {
    await Promise.all(members.map((m) => m.start()));
  } catch (error) {
    await stopMembers(members);
    throw error;
  }
}

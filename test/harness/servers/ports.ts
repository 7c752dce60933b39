import { mkdirSync, readdirSync, readFileSync, rmdirSync, unlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { hookExit } from './process.js';

const handedOut = new Set<number>();

/**
 * Ports handed out by any test process on this machine, one file each holding the owner's PID. The
 * suite runs files in several processes: while a killed member is down its port is free, and another
 * process must not pick it, or the member could not start again.
 */
const RESERVED = join(tmpdir(), 'baton-test-ports');
const reservedHere: string[] = [];
// The last process of a run to let go of its claims removes the folder too (see `removePortClaims`).
process.on('exit', removePortClaims);

/** Lets go of this process's claims. */
function releaseClaims(): void {
  for (const file of reservedHere.splice(0)) {
    try {
      unlinkSync(file);
    } catch {
      // already gone
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Claims `port` for this process unless a live process holds it (a dead owner's claim is taken over). */
function reserve(port: number): boolean {
  mkdirSync(RESERVED, { recursive: true });
  const file = join(RESERVED, String(port));
  for (let attempt = 0; attempt < 2; attempt += 1) {
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      // Let go of it on a signal or a lost parent too: the 'exit' handler below does not run then.
      hookExit();
      reservedHere.push(file);
      return true;
    } catch {
      let owner = 0;
      try {
        owner = Number(readFileSync(file, 'utf8').trim() || '0');
      } catch {
        continue; // its owner let it go just now: try to claim it again
      }
      if (owner > 0 && alive(owner)) return false;
      try {
        unlinkSync(file);
      } catch {
        // another process took it over first
      }
    }
  }
  return false;
}

/** Gives back a claim of this process (the port turned out to be in use by something else). */
function unreserve(port: number): void {
  const file = join(RESERVED, String(port));
  const index = reservedHere.indexOf(file);
  if (index >= 0) reservedHere.splice(index, 1);
  try {
    unlinkSync(file);
  } catch {
    // already gone
  }
}

/** Server ports are chosen from here up to the start of the kernel's ephemeral range. */
const LOWEST = 10_000;

/** The first port the kernel may give an outgoing connection (Linux's default range starts at 32768). */
function ephemeralStart(): number {
  try {
    const start = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(start) && start > LOWEST + 1_000 ? start : 32_768;
  } catch {
    return 32_768;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A free 127.0.0.1 port, never the same one twice on this machine while its process lives, and outside the kernel's ephemeral
 * range: while a killed server is down, clients keep dialling its port, and an outgoing connection may
 * be given that very port as its own (on loopback even connecting to itself), so that the restarted
 * server could not bind it again ("address already in use").
 */
export async function freePort(): Promise<number> {
  const span = ephemeralStart() - LOWEST;
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = LOWEST + Math.floor(Math.random() * span);
    // Claimed before it is probed: a probe binds the port for a moment, and a member of another
    // process that is restarting on it right then would fail with "address already in use".
    if (handedOut.has(port) || !reserve(port)) continue;
    if (!(await bindable(port))) {
      unreserve(port);
      continue;
    }
    handedOut.add(port);
    return port;
  }
  throw new Error('no free port found on 127.0.0.1');
}

/**
 * Lets go of this process's claims and of those whose owner is gone, and removes the folder of port
 * claims if no live process holds one: every test process does at its exit, and the run's teardown once
 * every server is stopped, so that the last of them leaves nothing in the temp dir.
 */
export function removePortClaims(): void {
  releaseClaims(); // the servers of this process are stopped by now
  // Claims of processes that ended without their exit handler (a test worker ended by a signal).
  let files: string[] = [];
  try {
    files = readdirSync(RESERVED);
  } catch {
    return; // no folder
  }
  for (const file of files) {
    const path = join(RESERVED, file);
    try {
      const owner = Number(readFileSync(path, 'utf8').trim() || '0');
      if (!(owner > 0 && alive(owner))) unlinkSync(path);
    } catch {
      // gone meanwhile
    }
  }
  try {
    rmdirSync(RESERVED);
  } catch {
    // not empty (another run on this machine holds ports), or gone already
  }
}

import { connect, type ConnectOptions } from '../../src/connect.js';
import { FairMutex, type Lock } from '../../recipes/mutex.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import type { BatonSession } from '../../src/session.js';

export type Mode = 'mutex' | 'rw';
export type Access = 'exclusive' | 'shared';

/** The messages a contender exchanges with the external checker. */
export type ContendMessage = { type: 'enter'; worker: number; token: string; access: Access } | { type: 'exit'; worker: number; access: Access };

/** What acquisition `i` of a worker asks for: a mutex is always exclusive; rw workers write every third time. */
function plan(mode: Mode, session: BatonSession, name: string): (i: number) => { lock: Lock; access: Access } {
  if (mode === 'mutex') {
    const mutex = new FairMutex(session, name);
    return () => ({ lock: mutex, access: 'exclusive' });
  }
  const rw = new ReadWriteLock(session, name);
  return (i) => (i % 3 === 0 ? { lock: rw.writeLock, access: 'exclusive' } : { lock: rw.readLock, access: 'shared' });
}

/**
 * One contender of the mutual-exclusion test: takes the lock `count` times and, while holding it,
 * reports enter and exit to the checker and waits for each to be acknowledged. Because exit is
 * acknowledged before the release is sent, any overlap the checker sees is a real double grant.
 */
export async function contend(
  url: string,
  options: ConnectOptions,
  mode: Mode,
  name: string,
  worker: number,
  count: number,
  report: (message: ContendMessage) => Promise<void>,
): Promise<void> {
  const session = await connect(url, options);
  try {
    const next = plan(mode, session, name);
    for (let i = 0; i < count; i += 1) {
      const { lock, access } = next(worker + i);
      const held = await lock.acquire({ timeoutMs: 60_000 });
      await report({ type: 'enter', worker, token: held.fencingToken.toString(), access });
      await report({ type: 'exit', worker, access });
      await held.release();
    }
  } finally {
    await session.close();
  }
}

/**
 * The external checker: at any moment either one exclusive holder and nobody else, or only shared
 * holders; fencing tokens of exclusive holders strictly increase.
 */
export class ExclusionChecker {
  exclusive: number | undefined;
  readonly shared = new Set<number>();
  lastToken = -1n;
  grants = 0;
  sharedAtOnce = 0;
  readonly violations: string[] = [];

  receive(message: ContendMessage): void {
    if (message.type === 'enter') this.#enter(message.worker, message.access, BigInt(message.token));
    else this.#exit(message.worker, message.access);
  }

  #enter(worker: number, access: Access, token: bigint): void {
    this.grants += 1;
    if (this.exclusive !== undefined) this.violations.push(`worker ${worker} (${access}) entered while ${this.exclusive} held exclusively`);
    if (access === 'shared') {
      this.shared.add(worker);
      this.sharedAtOnce = Math.max(this.sharedAtOnce, this.shared.size);
      return;
    }
    if (this.shared.size > 0) this.violations.push(`worker ${worker} entered exclusively while ${[...this.shared].join(',')} shared`);
    if (token <= this.lastToken) this.violations.push(`exclusive token ${token} after ${this.lastToken}`);
    this.lastToken = token;
    this.exclusive = worker;
  }

  #exit(worker: number, access: Access): void {
    if (access === 'shared') {
      if (!this.shared.delete(worker)) this.violations.push(`worker ${worker} left a shared hold it did not have`);
    } else {
      if (this.exclusive !== worker) this.violations.push(`worker ${worker} exited but ${this.exclusive} held`);
      this.exclusive = undefined;
    }
  }
}

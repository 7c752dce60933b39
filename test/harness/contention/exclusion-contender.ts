import type { Session } from '../../../recipes/contract.js';
import { FairMutex, type Lock } from '../../../recipes/mutex.js';
import { ReadWriteLock } from '../../../recipes/rw-lock.js';
import { connect, type ConnectOptions } from '../../../src/connect.js';

export type Mode = 'mutex' | 'rw';
export type Access = 'exclusive' | 'shared';

/** The messages a contender exchanges with the external checker. */
export type ContendMessage =
  | { type: 'enter'; worker: number; token: string; access: Access }
  | { type: 'exit'; worker: number; access: Access }
  /** The exclusive holder now holds shared (a downgrade): it still holds, but lets readers in. */
  | { type: 'downgrade'; worker: number };

type Report = (message: ContendMessage) => Promise<void>;
/** One acquisition: takes the lock, reports what it holds while it holds it, releases. */
type Step = (worker: number, report: Report) => Promise<void>;

/** One plain acquisition of `lock`: exit is acknowledged before the release is sent. */
function hold(lock: Lock, access: Access): Step {
  return async (worker, report) => {
    const held = await lock.acquire({ timeoutMs: 60_000 });
    await report({ type: 'enter', worker, token: held.fencingToken.toString(), access });
    await report({ type: 'exit', worker, access });
    await held.release();
  };
}

/** Write, then downgrade: the read lock is taken at the writer's place before the write is released. */
function writeThenRead(rw: ReadWriteLock): Step {
  return async (worker, report) => {
    const write = await rw.writeLock.acquire({ timeoutMs: 60_000 });
    await report({ type: 'enter', worker, token: write.fencingToken.toString(), access: 'exclusive' });
    const read = await rw.readLock.acquire({ timeoutMs: 0 });
    await report({ type: 'downgrade', worker });
    await write.release();
    // Read on for a moment, as a downgrading writer does: a writer wrongly let in by the write's
    // release then enters while this read is still reported held.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await report({ type: 'exit', worker, access: 'shared' });
    await read.release();
  };
}

/** What acquisition `i` of a worker does: a mutex is always exclusive; rw workers write every third time, downgrading every other write. */
function plan(mode: Mode, session: Session, name: string): (i: number) => Step {
  if (mode === 'mutex') {
    const step = hold(new FairMutex(session, name), 'exclusive');
    return () => step;
  }
  const rw = new ReadWriteLock(session, name);
  const [read, write, downgrade] = [hold(rw.readLock, 'shared'), hold(rw.writeLock, 'exclusive'), writeThenRead(rw)];
  return (i) => (i % 6 === 0 ? downgrade : i % 3 === 0 ? write : read);
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
  report: Report,
): Promise<void> {
  const session = await connect(url, options);
  try {
    const next = plan(mode, session, name);
    for (let i = 0; i < count; i += 1) await next(worker + i)(worker, report);
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
  downgrades = 0;
  readonly violations: string[] = [];

  receive(message: ContendMessage): void {
    if (message.type === 'enter') this.#enter(message.worker, message.access, BigInt(message.token));
    else if (message.type === 'downgrade') this.#downgrade(message.worker);
    else this.#exit(message.worker, message.access);
  }

  #enter(worker: number, access: Access, token: bigint): void {
    this.grants += 1;
    if (this.exclusive !== undefined)
      this.violations.push(`worker ${worker} (${access}) entered while ${this.exclusive} held exclusively`);
    if (access === 'shared') {
      this.shared.add(worker);
      this.sharedAtOnce = Math.max(this.sharedAtOnce, this.shared.size);
      return;
    }
    if (this.shared.size > 0)
      this.violations.push(`worker ${worker} entered exclusively while ${[...this.shared].join(',')} shared`);
    if (token <= this.lastToken) this.violations.push(`exclusive token ${token} after ${this.lastToken}`);
    this.lastToken = token;
    this.exclusive = worker;
  }

  #downgrade(worker: number): void {
    if (this.exclusive !== worker)
      this.violations.push(`worker ${worker} downgraded but ${this.exclusive} held exclusively`);
    this.exclusive = undefined;
    this.shared.add(worker);
    this.downgrades += 1;
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

import type { Session } from './contract.js';
import { isSession } from './contract.js';
import { exclusive } from './decide.js';
import { InvalidArgumentError } from './errors.js';
import { LockHandle } from './handle.js';
import { tryTurn, waitForTurn, type QueueRequest } from './queue.js';
import { validateName, validateWaitOptions, type WaitOptions } from './validate.js';

/** What FairMutex, readLock and writeLock have in common. */
export interface Lock {
  readonly name: string;
  acquire(options?: WaitOptions): Promise<LockHandle>;
  tryAcquire(): Promise<LockHandle | null>;
  withLock<T>(fn: (lock: LockHandle) => Promise<T> | T, options?: WaitOptions): Promise<T>;
}

/** The queue-backed lock shared by FairMutex and both halves of ReadWriteLock. */
export class QueueLock implements Lock {
  readonly name: string;
  readonly #request: QueueRequest;

  constructor(request: QueueRequest) {
    this.name = request.queue;
    this.#request = request;
  }

  async acquire(options?: WaitOptions): Promise<LockHandle> {
    const entry = await waitForTurn(this.#request, validateWaitOptions(options));
    return new LockHandle(this.#request.session, entry, this.#request.what);
  }

  async tryAcquire(): Promise<LockHandle | null> {
    const entry = await tryTurn(this.#request);
    return entry === null ? null : new LockHandle(this.#request.session, entry, this.#request.what);
  }

  async withLock<T>(fn: (lock: LockHandle) => Promise<T> | T, options?: WaitOptions): Promise<T> {
    if (typeof fn !== 'function') throw new InvalidArgumentError('fn', fn, 'a function');
    const lock = await this.acquire(options);
    try {
      return await fn(lock);
    } finally {
      await lock.release();
    }
  }
}

export function checkSession(session: unknown): Session {
  if (!isSession(session)) throw new InvalidArgumentError('session', session, 'a session from connect()');
  return session;
}

/** A fair (FIFO) mutual-exclusion lock: contenders are granted in the order they queued. */
export class FairMutex extends QueueLock {
  constructor(session: Session, name: string) {
    const queue = validateName(name);
    super({ session: checkSession(session), queue, kind: 'lock', decide: exclusive, what: `lock "${queue}"` });
  }
}

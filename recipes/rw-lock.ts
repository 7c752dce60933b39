import { AsyncLocalStorage } from 'node:async_hooks';

import { coreOf, type Entry, type Session } from './contract.js';
import { exclusive, exclusiveLookahead, shared, sharedLookahead } from './decide.js';
import { InvalidArgumentError, LockUpgradeError } from './errors.js';
import { entryOf, type LockHandle } from './handle.js';
import { LOCK_INTEROP, type LockOptions, validateRecipeOptions } from './interop.js';
import { checkSession, type Lock, QueueLock } from './mutex.js';
import { type Participant, type ParticipantsOptions } from './participants.js';
import { validateName, type WaitOptions } from './validate.js';

/**
 * A shared read / exclusive write lock in one queue. Readers share with readers; a reader waits for
 * the nearest writer queued before it, so a stream of readers cannot starve a queued writer; writers
 * are granted one at a time in FIFO order.
 *
 * One ReadWriteLock object is one owner: its holder of the write lock may take the read lock at once
 * (a downgrade: the read entry takes the writer's place, ahead of everyone who queued later), and its
 * holder of a read lock is refused the write lock with LockUpgradeError instead of waiting for itself.
 * Independent flows of work should each use their own ReadWriteLock object (they are cheap). A
 * `Reentrant` around either half brings its own owners: each of them is one owner in that sense, and
 * two of them queue like two objects.
 */
export class ReadWriteLock {
  /** The lock name, as validated (`config/pricing`). */
  readonly name: string;
  /** Shared: granted while no writer holds or is queued ahead (acquire, tryAcquire, withLock). */
  readonly readLock: Lock;
  /**
   * Exclusive: granted alone, in FIFO order among writers. Rejects with `LockUpgradeError` while this
   * object (or this `Reentrant` owner) holds the read lock: that would wait for itself.
   */
  readonly writeLock: Lock;
  /** Held handles, with who holds them (undefined: this object's own calls; otherwise a Reentrant's owner). */
  readonly #reads = new Map<LockHandle, unknown>();
  readonly #writes = new Map<LockHandle, unknown>();

  /**
   * A read/write lock named `name` on `session`; sends nothing to the server. Throws
   * `InvalidNameError` for a bad name, `InvalidArgumentError` for a session that is not one from an
   * awaited `connect()` or for bad options, `ClosedError` or `SessionLostError` for an ended session.
   */
  constructor(session: Session, name: string, options?: LockOptions) {
    const queue = validateName(name);
    const checked = checkSession(session);
    const dialect = validateRecipeOptions(options, checked, LOCK_INTEROP);
    const core = coreOf(checked);
    this.name = queue;
    // One context for Reentrants around either half: a write's owner taking the read inside is one owner.
    const owners = new AsyncLocalStorage<unknown>();
    this.readLock = new QueueLock(
      {
        session: checked,
        core,
        queue,
        kind: 'read',
        decide: shared,
        lookahead: sharedLookahead,
        what: `read lock "${queue}"`,
        dialect,
      },
      { place: (owner) => this.#heldWrite(owner), granted: (lock, owner) => prune(this.#reads).set(lock, owner) },
      owners,
    );
    this.writeLock = new QueueLock(
      {
        session: checked,
        core,
        queue,
        kind: 'write',
        decide: exclusive,
        lookahead: exclusiveLookahead,
        what: `write lock "${queue}"`,
        dialect,
      },
      {
        place: (owner) => {
          for (const holder of prune(this.#reads).values())
            if (holder === owner) throw new LockUpgradeError(`read/write lock "${queue}"`);
          return undefined;
        },
        granted: (lock, owner) => prune(this.#writes).set(lock, owner), // pruned here too: a lock used only for writes
      },
      owners,
    );
  }

  /**
   * Turns a held write lock into a read lock without a gap: the read lock is taken at the writer's
   * place (never waiting), then the write lock is released. Resolves with the read handle. Throws
   * `InvalidArgumentError` for a handle that is not a held write lock of this object. Rejects with
   * `LockDowngradeError` on etcd when a Go waiter queued behind the writer (it would not wait for the
   * read), or with the release's error; the write lock is then still held.
   */
  async downgrade(write: LockHandle, options?: WaitOptions): Promise<LockHandle> {
    if (!this.#writes.has(write) || !write.held) {
      throw new InvalidArgumentError(
        'write lock handle',
        write,
        `a held write lock of this ReadWriteLock ("${this.name}")`,
      );
    }
    // As the write lock's owner, whose write the read is placed at.
    const read = await (this.readLock as QueueLock).acquireAs(this.#writes.get(write), options ?? {});
    try {
      await write.release();
    } catch (error) {
      // Not downgraded: the caller keeps the write lock it asked to turn, not a read it never got.
      await read.release().catch(() => undefined);
      throw error;
    }
    return read;
  }

  /**
   * The lock's contenders as the server has them now, in queue order: readers and writers, baton's and
   * peers' (Curator, kazoo), with session, age, lease left and fencing token. Rejects with
   * `LockTimeoutError` after `timeoutMs`, `signal.reason` on abort, or the session's or backend's error.
   */
  participants(options?: ParticipantsOptions): Promise<Participant[]> {
    return (this.readLock as QueueLock).participants(options);
  }

  /** The entry of the write lock `owner` holds, if any: its read lock takes that place (a downgrade). */
  #heldWrite(owner: unknown): Entry | undefined {
    for (const [lock, holder] of prune(this.#writes)) if (holder === owner) return entryOf(lock);
    return undefined;
  }
}

/** Forgets handles that were released or lost. */
function prune(locks: Map<LockHandle, unknown>): Map<LockHandle, unknown> {
  for (const lock of locks.keys()) if (!lock.held) locks.delete(lock);
  return locks;
}

import { coreOf, type Session } from './contract.js';
import { InvalidArgumentError } from './errors.js';
import { checkOptionKeys, quoted } from './validate.js';

/**
 * Whose entry names a recipe writes on ZooKeeper, so that a peer client locking the same path sees
 * baton's entries (baton reads every peer's names whatever this says):
 * - `curator` (the default): Curator's InterProcessMutex, InterProcessReadWriteLock and LeaderLatch;
 * - `curator-selector` (LeaderElection only): Curator's LeaderSelector;
 * - `kazoo`: kazoo's Lock, ReadLock / WriteLock and Election.
 * etcd needs none: etcd's Go recipes wait for every key created before theirs, baton's included.
 */
export type Interop = 'curator' | 'curator-selector' | 'kazoo';
/** What a lock (FairMutex, ReadWriteLock) can write: LeaderSelector's names are an election's. */
export type LockInterop = Exclude<Interop, 'curator-selector'>;

/** Options of `FairMutex` and `ReadWriteLock`. */
export interface LockOptions {
  /** Whose entry names to write on ZooKeeper (see `Interop`); default `'curator'`; only on ZooKeeper. */
  readonly interop?: LockInterop | undefined;
}

/** The dialects a lock (mutex, read/write lock) can write; an election can also write LeaderSelector's. */
export const LOCK_INTEROP: readonly Interop[] = ['curator', 'kazoo'];
export const ELECTION_INTEROP: readonly Interop[] = ['curator', 'curator-selector', 'kazoo'];

const NO_DIALECTS =
  "no value on this backend: only ZooKeeper's peers need baton to write their names (etcd's Go recipes see baton's keys as they are)";

/**
 * Checks a recipe constructor's options: an object with only `allowed` keys, and an `interop` the
 * recipe and the session's backend can write. Returns the dialect to hand the backend, if any.
 */
export function validateRecipeOptions(
  options: unknown,
  session: Session,
  choices: readonly Interop[],
  allowed: readonly string[] = ['interop'],
): Interop | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError('options', options, `an object with ${quoted(allowed)}`);
  }
  checkOptionKeys(options, allowed);
  const { interop } = options as { interop?: unknown };
  if (interop === undefined) return undefined;
  if (typeof interop !== 'string' || !(choices as readonly string[]).includes(interop)) {
    throw new InvalidArgumentError('interop', interop, `one of ${quoted(choices)}`);
  }
  const { dialects } = coreOf(session).backend;
  if (!dialects.includes(interop)) {
    const allowed = dialects.length === 0 ? NO_DIALECTS : `one of this backend's ${quoted(dialects)}`;
    throw new InvalidArgumentError('interop', interop, allowed);
  }
  return interop as Interop;
}

import type { Session } from './contract.js';
import { InvalidArgumentError } from './errors.js';

/**
 * Whose entry names a recipe writes on ZooKeeper, so that a peer client locking the same path sees
 * baton's entries (baton reads every peer's names whatever this says):
 * - `curator` (the default): Curator's InterProcessMutex, InterProcessReadWriteLock and LeaderLatch;
 * - `curator-selector` (LeaderElection only): Curator's LeaderSelector;
 * - `kazoo`: kazoo's Lock, ReadLock / WriteLock and Election.
 * etcd needs none: etcd's Go recipes wait for every key created before theirs, baton's included.
 */
export type Interop = 'curator' | 'curator-selector' | 'kazoo';

export interface RecipeOptions {
  /** Which peer client's entry names to write on ZooKeeper (see `Interop`); only on ZooKeeper. */
  readonly interop?: Interop | undefined;
}

/** The dialects a lock (mutex, read/write lock) can write; an election can also write LeaderSelector's. */
export const LOCK_INTEROP: readonly Interop[] = ['curator', 'kazoo'];
export const ELECTION_INTEROP: readonly Interop[] = ['curator', 'curator-selector', 'kazoo'];

/**
 * Checks a recipe constructor's options: an object with only `allowed` keys, and an `interop` the
 * recipe and the session's backend can write. Returns the dialect to hand the backend, if any.
 */
export function validateRecipeOptions(options: unknown, session: Session, choices: readonly Interop[], allowed: readonly string[] = ['interop']): Interop | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError('options', options, `an object with ${allowed.map((key) => `"${key}"`).join(', ')}`);
  }
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) throw new InvalidArgumentError(`option "${key}"`, (options as Record<string, unknown>)[key], `one of the known options ${allowed.map((k) => `"${k}"`).join(', ')}`);
  }
  const { interop } = options as { interop?: unknown };
  if (interop === undefined) return undefined;
  if (typeof interop !== 'string' || !(choices as readonly string[]).includes(interop)) {
    throw new InvalidArgumentError('interop', interop, `one of ${choices.map((c) => `"${c}"`).join(', ')}`);
  }
  const { dialects } = session.backend;
  if (!dialects.includes(interop)) {
    throw new InvalidArgumentError('interop', interop, dialects.length === 0
      ? "no value on this backend: its peer clients (etcd's Go recipes) see baton's entries as they are"
      : `one of this backend's ${dialects.map((d) => `"${d}"`).join(', ')}`);
  }
  return interop as Interop;
}

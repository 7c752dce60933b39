import type { Entry, GuardedOp } from '../../../recipes/contract.js';
import type { MemoryStore } from './store.js';

/**
 * The guarded values of each in-process store: `<namespace>/<queue>` -> name -> value, beside the
 * store's queues rather than in them, so that no listing of a queue sees them. Kept per store (a
 * WeakMap), as the store's own maps are.
 */
const valuesOf = new WeakMap<MemoryStore, Map<string, Map<string, string>>>();

function lockValues(store: MemoryStore, dir: string, create: boolean): Map<string, string> | undefined {
  let stores = valuesOf.get(store);
  if (stores === undefined) valuesOf.set(store, (stores = new Map()));
  let values = stores.get(dir);
  if (values === undefined && create) stores.set(dir, (values = new Map()));
  return values;
}

/**
 * Applies `op` only if `entry` is still `owner`'s in the store: the check and the write are one
 * synchronous step, which nothing else on the store can come between (the memory store's lock).
 */
export function memoryGuardedWrite(
  store: MemoryStore,
  owner: string,
  dir: string,
  entry: Entry,
  op: GuardedOp,
): boolean {
  if (store.get(entry.key)?.owner !== owner) return false;
  if (op.type === 'put') {
    lockValues(store, dir, true)!.set(op.name, op.value);
    return true;
  }
  const values = lockValues(store, dir, false);
  values?.delete(op.name);
  if (values?.size === 0) valuesOf.get(store)!.delete(dir);
  return true;
}

/** The value under `name` next to the lock whose directory is `dir`, or null. */
export function memoryGuardedRead(store: MemoryStore, dir: string, name: string): string | null {
  return lockValues(store, dir, false)?.get(name) ?? null;
}

/** `<dir>#<name>` of every guarded value under a path prefix (for tests: nothing may be left behind). */
export function memoryGuardedKeysUnder(store: MemoryStore, prefix: string): string[] {
  const keys: string[] = [];
  for (const [dir, values] of valuesOf.get(store) ?? []) {
    if (dir === prefix || dir.startsWith(`${prefix}/`))
      keys.push(...[...values.keys()].map((name) => `${dir}#${name}`));
  }
  return keys;
}

import type { Abortable, Entry } from '../../recipes/contract.js';

/** One local waiter for a deletion; a backend settles every waiter of a key at once. */
export interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Adds a waiter to `waiters` whose promise settles when the backend settles the set, or rejects with
 * `signal.reason` when the signal aborts; `onLeave` then runs after it left the set.
 */
export function addWaiter(waiters: Set<Waiter>, signal: Abortable, onLeave: () => void): Promise<void> {
  return enlist(waiters, signal, onLeave).done;
}

/** `addWaiter`, also giving the waiter itself (a backend that settles one waiter of a set alone needs it). */
export function enlist(
  waiters: Set<Waiter>,
  signal: Abortable,
  onLeave: () => void,
): { done: Promise<void>; waiter: Waiter } {
  signal.throwIfAborted();
  let waiter!: Waiter;
  const done = new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      waiters.delete(waiter);
      onLeave();
      reject(signal.reason);
    };
    waiter = {
      resolve: () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      },
      reject: (error) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    };
    waiters.add(waiter);
    signal.addEventListener('abort', onAbort, { once: true });
  });
  return { done, waiter };
}

/** Whether two listings of a queue hold the same entries (by key; listings are sorted by order). */
export function sameEntries(a: readonly Entry[], b: readonly Entry[]): boolean {
  return a.length === b.length && a.every((entry, index) => entry.key === b[index]!.key);
}

/** Takes the waiters of `key` out of `registry` and resolves them, or rejects them with `failure.error`. */
export function settleWaiters(registry: Map<string, Set<Waiter>>, key: string, failure?: { error: unknown }): void {
  const waiters = registry.get(key);
  registry.delete(key);
  for (const waiter of waiters ?? []) {
    if (failure === undefined) waiter.resolve();
    else waiter.reject(failure.error);
  }
}

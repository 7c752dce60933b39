/**
 * Sends a request that settles when `dead` aborts, whatever the client does with it: clients keep
 * requests queued while disconnected, and not every client fails them when it is closed.
 */
export function untilDead<T>(dead: AbortSignal, request: () => Promise<T>): Promise<T> {
  if (dead.aborted) return Promise.reject(dead.reason);
  return new Promise<T>((resolve, reject) => {
    const onDead = (): void => reject(dead.reason);
    dead.addEventListener('abort', onDead, { once: true });
    request().then(
      (value) => {
        dead.removeEventListener('abort', onDead);
        resolve(value);
      },
      (error: unknown) => {
        dead.removeEventListener('abort', onDead);
        reject(error);
      },
    );
  });
}

/** A short, growing pause between retries, so that a connection flapping fast cannot spin the CPU. */
export function backoff(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(10 * 2 ** attempt, 250)));
}

/** One local waiter for a deletion; a backend settles every waiter of a key at once. */
export interface Waiter {
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * Adds a waiter to `waiters` whose promise settles when the backend settles the set, or rejects with
 * `signal.reason` when the signal aborts; `onLeave` then runs after it left the set.
 */
export function addWaiter(waiters: Set<Waiter>, signal: AbortSignal, onLeave: () => void): Promise<void> {
  signal.throwIfAborted();
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      waiters.delete(waiter);
      onLeave();
      reject(signal.reason);
    };
    const waiter: Waiter = {
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
}

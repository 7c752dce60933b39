/** Polls `check` until it returns true; bounded by `timeoutMs`, after which it throws naming `what`. */
export async function eventually(
  what: string,
  check: () => boolean | Promise<boolean>,
  timeoutMs = 10_000,
): Promise<void> {
  const started = Date.now();
  let delay = 2;
  while (!(await check())) {
    if (Date.now() - started > timeoutMs) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 50);
  }
}

/** A promise's settled state without waiting for it, and its rejection if it rejected. */
export function track<T>(promise: Promise<T>): {
  readonly settled: boolean;
  readonly failure: { readonly error: unknown } | undefined;
  readonly promise: Promise<T>;
} {
  const state: { settled: boolean; failure: { error: unknown } | undefined; promise: Promise<T> } = {
    settled: false,
    failure: undefined,
    promise,
  };
  promise.then(
    () => (state.settled = true),
    (error: unknown) => {
      state.settled = true;
      state.failure = { error };
    },
  );
  return state;
}

/**
 * Throws what the tracked promise rejected with, if it did: a test waiting for that call's effects
 * would otherwise time out and hide why.
 */
export function rethrowFailure(tracked: { readonly failure: { readonly error: unknown } | undefined }): void {
  if (tracked.failure !== undefined) throw tracked.failure.error;
}

/**
 * Marks a promise as handled right away and returns it, for promises that a test collects and awaits
 * later: a rejection in between is then reported by the later await, not as an unhandled rejection.
 */
export function later<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => undefined);
  return promise;
}

/**
 * `promise`, or an error naming `what` once `timeoutMs` passed without it settling: a step that hangs
 * then fails the test with its name instead of the test's own timeout, which names none.
 */
export async function settlesWithin<T>(what: string, promise: Promise<T>, timeoutMs: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not settled after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([promise, timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

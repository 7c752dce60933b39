import { LockTimeoutError } from './errors.js';

export interface Deadline {
  /** Aborts when the caller's signal aborts, the session ends, or the time runs out. */
  readonly signal: AbortSignal;
  /** Removes every listener and timer this deadline installed. */
  dispose(): void;
  /**
   * Ends the wait with `reason`, as an aborted source would (one less AbortController per wait than
   * a source made only to be aborted); nothing once the wait is over or already aborted.
   */
  cancel(reason: unknown): void;
  /**
   * Throws if the wait was cancelled (caller's signal, session end). A timeout alone does not count:
   * a lock that turns out to be free is granted even when the time ran out while asking for it.
   */
  throwIfCancelled(): void;
}

/**
 * One deadline for a whole wait (not a fresh timeout per pass), combining the caller's signal, the
 * session's signal and the timeout. Listeners are removed on dispose so that long-lived signals
 * (the session's) do not accumulate one listener per acquisition.
 */
export function deadline(
  what: string,
  timeoutMs: number | undefined,
  signals: readonly (AbortSignal | undefined)[],
  /** The timeout as the caller gave it, for the error message (`timeoutMs` may be what is left of it). */
  statedMs: number | undefined = timeoutMs,
): Deadline {
  const controller = new AbortController();
  let timedOut = false;
  const cleanups: (() => void)[] = [];
  let disposed = false;
  const dispose = (): void => {
    disposed = true;
    for (const cleanup of cleanups.splice(0)) cleanup();
  };
  for (const source of signals) {
    if (source === undefined) continue;
    if (source.aborted) {
      controller.abort(source.reason);
      break;
    }
    const onAbort = (): void => {
      controller.abort(source.reason);
      dispose();
    };
    source.addEventListener('abort', onAbort, { once: true });
    cleanups.push(() => source.removeEventListener('abort', onAbort));
  }
  if (timeoutMs !== undefined && !controller.signal.aborted) {
    const timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new LockTimeoutError(what, statedMs ?? timeoutMs));
      dispose();
    }, timeoutMs);
    cleanups.push(() => clearTimeout(timer));
  }
  if (controller.signal.aborted) dispose();
  const throwIfCancelled = (): void => {
    if (controller.signal.aborted && !timedOut) throw controller.signal.reason;
  };
  const cancel = (reason: unknown): void => {
    if (disposed || controller.signal.aborted) return;
    controller.abort(reason);
    dispose();
  };
  return { signal: controller.signal, dispose, cancel, throwIfCancelled };
}

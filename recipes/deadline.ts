import { listenForAbort } from './abort-fanout.js';
import type { Abortable } from './contract.js';
import { LockTimeoutError } from './errors.js';

export interface Deadline {
  /** Aborts when the caller's signal aborts, the session ends, or the time runs out. */
  readonly signal: Abortable;
  /** Removes every listener and timer this deadline installed. */
  dispose(): void;
  /** Ends the wait with `reason`, as an aborted source would; nothing once the wait is over or already aborted. */
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
 *
 * The deadline is its own signal, a plain object with the part of AbortSignal that the backends'
 * waits use: every contended acquisition makes one, and an AbortController (an EventTarget) costs
 * several times as much to make, listen to and dispose of.
 */
export function deadline(
  what: string,
  timeoutMs: number | undefined,
  signals: readonly (AbortSignal | undefined)[],
  /** The timeout as the caller gave it, for the error message (`timeoutMs` may be what is left of it). */
  statedMs: number | undefined = timeoutMs,
): Deadline {
  return new CombinedDeadline(what, timeoutMs, signals, statedMs);
}

class CombinedDeadline implements Deadline, Abortable {
  aborted = false;
  reason: unknown = undefined;
  #listeners: (() => void)[] = [];
  #timedOut = false;
  #disposed = false;
  #timer: NodeJS.Timeout | undefined;
  /** What removes each source's abort listener (see abort-fanout.ts). */
  #sources: (() => void)[] = [];

  constructor(
    what: string,
    timeoutMs: number | undefined,
    signals: readonly (AbortSignal | undefined)[],
    statedMs: number | undefined,
  ) {
    for (const source of signals) {
      if (source === undefined) continue;
      if (source.aborted) {
        this.#abort(source.reason);
        return;
      }
      this.#sources.push(listenForAbort(source, () => this.#abort(source.reason)));
    }
    if (timeoutMs !== undefined) {
      this.#timer = setTimeout(() => {
        this.#timedOut = true;
        this.#abort(new LockTimeoutError(what, statedMs ?? timeoutMs));
      }, timeoutMs);
    }
  }

  get signal(): Abortable {
    return this;
  }

  throwIfAborted(): void {
    if (this.aborted) throw this.reason;
  }

  addEventListener(_type: 'abort', listener: () => void): void {
    // Like an AbortSignal: a listener added once aborted is never called, one added twice is kept
    // once, and every listener runs once.
    if (!this.aborted && !this.#listeners.includes(listener)) this.#listeners.push(listener);
  }

  removeEventListener(_type: 'abort', listener: () => void): void {
    const at = this.#listeners.indexOf(listener);
    if (at !== -1) this.#listeners.splice(at, 1);
  }

  dispose(): void {
    if (this.#disposed) return;
    this.#disposed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    for (const remove of this.#sources) remove();
    this.#sources = [];
  }

  cancel(reason: unknown): void {
    if (this.#disposed || this.aborted) return;
    this.#abort(reason);
  }

  throwIfCancelled(): void {
    if (this.aborted && !this.#timedOut) throw this.reason;
  }

  #abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.dispose();
    // Like an AbortSignal: a listener that an earlier one removes during the abort is not called.
    for (const listener of [...this.#listeners]) {
      const at = this.#listeners.indexOf(listener);
      if (at === -1) continue;
      this.#listeners.splice(at, 1);
      try {
        listener();
      } catch (error) {
        // As an AbortSignal reports a listener that throws: apart, without skipping the others.
        process.nextTick(() => {
          throw error;
        });
      }
    }
  }
}

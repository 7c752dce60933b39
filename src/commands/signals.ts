import { constants } from 'node:os';

/** The signals `baton lock` and `baton elect` pass on to their command rather than die of. */
export const RELAYED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'] as const;
export type RelayedSignal = (typeof RELAYED)[number];

/** 128 + the signal's number, as shells report a process a signal ended. */
export function signalStatus(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}

/**
 * Catches SIGINT, SIGTERM, SIGHUP and SIGQUIT for as long as a command runs: each goes to the current
 * target (the child, or the wait for the lock, which gives up), and the first one is remembered so that
 * baton can stop afterwards with the status that signal means. Installed once, removed by `dispose`.
 */
export class SignalRelay {
  #received: RelayedSignal | undefined;
  #target: ((signal: RelayedSignal) => void) | undefined;
  readonly #handlers = new Map<RelayedSignal, () => void>();
  readonly #stop = new AbortController();

  constructor() {
    for (const signal of RELAYED) {
      const handler = (): void => this.#deliver(signal);
      this.#handlers.set(signal, handler);
      process.on(signal, handler);
    }
  }

  /** The first signal received, if any. */
  get received(): RelayedSignal | undefined {
    return this.#received;
  }

  /** Aborts at the first signal (for the waits between commands: connecting, acquiring, backing off). */
  get signal(): AbortSignal {
    return this.#stop.signal;
  }

  /** Where signals go from now on (the running child); undefined: only `signal` aborts. */
  route(target: ((signal: RelayedSignal) => void) | undefined): void {
    this.#target = target;
  }

  dispose(): void {
    for (const [signal, handler] of this.#handlers) process.off(signal, handler);
    this.#handlers.clear();
  }

  #deliver(signal: RelayedSignal): void {
    this.#received ??= signal;
    this.#stop.abort(new Error(`interrupted by ${signal}`));
    this.#target?.(signal);
  }
}

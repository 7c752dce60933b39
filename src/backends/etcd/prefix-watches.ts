import type { Abortable, Entry } from '../../../recipes/contract.js';
import type { EtcdWatchers } from './watches.js';

/** A wait for a change of a queue, as the backstop sees it. */
export interface PrefixWait {
  readonly queue: string;
  readonly prefix: string;
  readonly seen: readonly Entry[];
  /** Ends the wait: the caller lists the queue again. */
  readonly wake: () => void;
}

/** What the prefix watches need of their driver. */
export interface PrefixWatchHost {
  /** The error a new watch meets once the session has ended, or undefined while it is open. */
  endError(): Error | undefined;
  /** A watch failure in the recipes' terms; one saying the lease is gone loses the session first. */
  streamFailed(error: unknown): Error;
  /** Whether the queue, listed now, differs from `seen`. */
  changed(queue: string, prefix: string, seen: readonly Entry[]): Promise<boolean>;
}

/** The session's waits for a change of a queue (election observers), one etcd prefix watch each. */
export class PrefixWatches {
  readonly #watchers: EtcdWatchers;
  readonly #host: PrefixWatchHost;
  /** Every queue-change wait in progress, by the function that ends it when the session ends. */
  readonly #waits = new Map<(reason: Error) => void, PrefixWait>();

  constructor(watchers: EtcdWatchers, host: PrefixWatchHost) {
    this.#watchers = watchers;
    this.#host = host;
  }

  get size(): number {
    return this.#waits.size;
  }

  /** The waits in progress (for the backstop). */
  values(): IterableIterator<PrefixWait> {
    return this.#waits.values();
  }

  /**
   * Resolves at the first put or delete under `prefix` once the watch exists, when the queue listed
   * after that differs from `seen`, or when the watch stream breaks (the caller lists again: etcd3
   * watchers can go quiet after a reconnect). From etcd's head, for the reasons `KeyWatches.#arm` gives.
   */
  watch(queue: string, prefix: string, seen: readonly Entry[], signal: Abortable): Promise<void> {
    signal.throwIfAborted();
    const ended = this.#host.endError();
    if (ended !== undefined) return Promise.reject(ended);
    return new Promise<void>((resolve, reject) => {
      const watcher = this.#watchers.client.watch().prefix(prefix).watcher();
      this.#watchers.track(watcher);
      this.#watchers.count(prefix, 1);
      const finish = (settle: () => void): void => {
        if (!this.#waits.delete(end)) return;
        signal.removeEventListener('abort', onAbort);
        this.#watchers.count(prefix, -1);
        this.#watchers.drop(watcher);
        settle();
      };
      const end = (reason: Error): void => finish(() => reject(reason));
      const onAbort = (): void => finish(() => reject(signal.reason));
      this.#waits.set(end, { queue, prefix, seen, wake: () => finish(resolve) });
      signal.addEventListener('abort', onAbort, { once: true });
      const changed = (): void => {
        if (this.#watchers.heard()) finish(resolve);
      };
      let created = false;
      watcher.on('connected', () => {
        if (created) return;
        created = true;
        // A failed listing wakes too: the caller's own listing meets the error and tells it.
        this.#host.changed(queue, prefix, seen).then(
          (changed) => {
            if (changed) finish(resolve);
          },
          () => finish(resolve),
        );
      });
      watcher.on('put', changed);
      watcher.on('delete', changed);
      watcher.on('disconnected', () => finish(resolve));
      watcher.on('error', (error: unknown) => {
        if (created) {
          // etcd ended the watch itself (a permission withdrawn), and etcd3 has let go of it
          // already: forgotten, not cancelled. The caller looks again, as after any wake.
          this.#watchers.forget(watcher);
          return finish(resolve);
        }
        finish(() => reject(this.#host.streamFailed(error)));
      });
    });
  }

  /** The session ended: every wait fails with `reason`. */
  endAll(reason: Error): void {
    for (const end of [...this.#waits.keys()]) end(reason);
  }
}

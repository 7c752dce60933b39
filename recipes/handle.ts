import type { Entry, Session } from './contract.js';
import { LockLostError } from './errors.js';

/**
 * A granted lock (or leadership). Its `signal` aborts with `LockLostError` as soon as ownership can
 * no longer be guaranteed. `release()` is idempotent; local ownership ends only after the server has
 * confirmed the delete (or the session, and with it the entry, is gone).
 */
export class LockHandle implements AsyncDisposable {
  readonly name: string;
  readonly fencingToken: bigint;
  readonly #entry: Entry;
  readonly #session: Session;
  readonly #controller = new AbortController();
  readonly #unhold: () => void;
  #released: Promise<void> | undefined;

  constructor(session: Session, entry: Entry, what: string) {
    this.#session = session;
    this.#entry = entry;
    this.name = entry.queue;
    this.fencingToken = entry.fencingToken;
    this.#unhold = session.hold({
      entry,
      lose: (reason) => this.#controller.abort(new LockLostError(what, { cause: reason })),
      release: () => this.release(),
    });
  }

  /** Aborted with `LockLostError` when ownership is in doubt (session lost, closed, entry gone). */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** True until released or lost. */
  get held(): boolean {
    return this.#released === undefined && !this.#controller.signal.aborted;
  }

  /** @internal the server entry behind this handle. */
  get entry(): Entry {
    return this.#entry;
  }

  /** @internal the session this handle belongs to. */
  get session(): Session {
    return this.#session;
  }

  release(): Promise<void> {
    this.#released ??= this.#session.backend.withdraw(this.#entry).then(
      () => {
        this.#unhold();
      },
      (error: unknown) => {
        // Not released: the next call may try again.
        this.#released = undefined;
        throw error;
      },
    );
    return this.#released;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.release();
  }
}

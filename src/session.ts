import { EventEmitter, setMaxListeners } from 'node:events';
import type { Backend, Hold, Session, SessionState, StateListener } from '../recipes/contract.js';
import { ClosedError, SessionLostError } from '../recipes/errors.js';
import type { Driver, DriverStatus } from './backends/driver.js';

/**
 * The session every recipe works through. It turns the driver's connection reports into states,
 * tells every holder when ownership can no longer be guaranteed, and closes in order: waiters are
 * withdrawn, holds released, then the server session ends.
 */
export class BatonSession implements Session {
  readonly #driver: Driver;
  readonly #events = new EventEmitter();
  readonly #controller = new AbortController();
  readonly #holds = new Set<Hold>();
  readonly #operations = new Set<Promise<void>>();
  #state: SessionState = 'connected';
  #closing: Promise<void> | undefined;

  constructor(driver: Driver) {
    this.#driver = driver;
    // Every waiter listens on the session's signal for the length of its wait; there may be thousands.
    setMaxListeners(0, this.#controller.signal);
    driver.onStatus((status, cause) => this.#onStatus(status, cause));
  }

  get id(): string {
    return this.#driver.id;
  }

  get state(): SessionState {
    return this.#state;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  get backend(): Backend {
    return this.#driver;
  }

  on(event: 'state', listener: StateListener): this {
    this.#events.on(event, listener);
    return this;
  }

  off(event: 'state', listener: StateListener): this {
    this.#events.off(event, listener);
    return this;
  }

  enter(): () => void {
    if (this.#closing !== undefined || this.#state === 'closed') throw new ClosedError();
    if (this.#state === 'lost') throw new SessionLostError();
    let done!: () => void;
    const operation = new Promise<void>((resolve) => (done = resolve));
    this.#operations.add(operation);
    return () => {
      this.#operations.delete(operation);
      done();
    };
  }

  hold(hold: Hold): () => void {
    if (this.#controller.signal.aborted) {
      hold.lose(this.#controller.signal.reason as Error);
      return () => undefined;
    }
    this.#holds.add(hold);
    return () => this.#holds.delete(hold);
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const reason = new ClosedError();
    this.#abortAll(reason);
    // Waiters see the aborted session signal and withdraw their entries; holds are released here.
    await Promise.allSettled([...this.#holds].map((hold) => hold.release()));
    await Promise.allSettled([...this.#operations]);
    await this.#driver.close();
    this.#setState('closed');
  }

  #onStatus(status: DriverStatus, cause?: unknown): void {
    if (this.#state === 'closed' || this.#state === 'lost') return;
    if (status === 'lost') {
      const reason = new SessionLostError('the session was lost', { cause });
      this.#abortAll(reason);
      if (this.#closing === undefined) this.#setState('lost');
      return;
    }
    if (this.#closing === undefined) this.#setState(status);
  }

  #abortAll(reason: Error): void {
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
    for (const hold of this.#holds) hold.lose(reason);
  }

  #setState(state: SessionState): void {
    const previous = this.#state;
    if (previous === state) return;
    this.#state = state;
    this.#events.emit('state', state, previous);
  }
}


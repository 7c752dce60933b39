import { EventEmitter, setMaxListeners } from 'node:events';

import {
  bindCore,
  type ForeignKey,
  type Hold,
  type Session,
  type SessionCore,
  type SessionState,
  type StateListener,
  type WaiterLostPolicy,
  type Waiting,
} from '../recipes/contract.js';
import { ClosedError, EntryGoneError, SessionLostError } from '../recipes/errors.js';
import type { LockListener } from '../recipes/events.js';
import type { ConnectionStatus, Driver, EntryInfo } from './driver-port.js';
import { tellSessionState } from './session-channel.js';
import { defaultDeadlineMarginMs, holdCheckEveryMs } from './timing.js';

/**
 * The session every recipe works through. It turns the driver's connection reports into states,
 * tells every holder when ownership can no longer be guaranteed, and closes in order: waiters are
 * withdrawn, holds released, then the server session ends. Users see it as a `Session`; the recipes
 * reach the rest through `coreOf` (a module-private map), this module's code through `internalsOf`.
 */
export class BatonSession implements Session {
  readonly #driver: Driver;
  readonly #events = new EventEmitter();
  /** Whether anyone listens for 'lock' (read on every acquire and grant; kept by on() and off()). */
  #reporting = false;
  readonly #controller = new AbortController();
  readonly #holds = new Set<Hold>();
  readonly #waiting = new Set<Waiting>();
  /** Operations in flight, and who waits for them to reach zero (close()). */
  #active = 0;
  #idle: (() => void) | undefined;
  #state: SessionState = 'connected';
  #closing: Promise<void> | undefined;
  readonly #deadlineMarginMs: number;
  readonly #onSuspend: 'wait' | 'abort';
  #lastAck: number;
  #deadline: NodeJS.Timeout | undefined;
  readonly #holdCheck: NodeJS.Timeout;
  #checkingHolds = false;

  /**
   * `deadlineMarginMs`: how long before the server could possibly expire the session the client gives up on
   * its own. The server keeps a session for `timeoutMs` after it last heard from us; it heard us no
   * earlier than the send time of the last request it answered, so holders are told at
   * `lastAck + timeoutMs - deadlineMarginMs`, before anyone else can be granted their locks.
   */
  constructor(driver: Driver, options: SessionOptions = {}) {
    this.#driver = driver;
    this.#onSuspend = options.onSuspend ?? 'wait';
    this.#deadlineMarginMs = options.deadlineMarginMs ?? defaultDeadlineMarginMs(driver.timeoutMs);
    this.#lastAck = driver.openedAt;
    // Observers (an election's observe(), inspect --watch) and users' own code listen on the session's
    // signal for as long as they wait; there may be many. Queue waits are told through `waiting()`.
    setMaxListeners(0, this.#controller.signal);
    driver.attach({
      status: (status, cause) => this.#onStatus(status, cause),
      ack: (sentAt) => {
        if (sentAt > this.#lastAck) this.#lastAck = sentAt;
      },
      foreign: (queue, key) => this.#tell('foreign', { queue, key }),
      deadlineMarginMs: this.#deadlineMarginMs,
      busy: () => this.#holds.size > 0 || this.#waiting.size > 0,
    });
    // A memory session never times out; its check is a map lookup, so it runs often.
    const checkEvery = Number.isFinite(driver.timeoutMs) ? holdCheckEveryMs(driver.timeoutMs) : 100;
    this.#holdCheck = setInterval(() => this.#checkHoldsNow(), checkEvery);
    this.#holdCheck.unref();
    this.#armDeadline();
    const core = this.#core(options.onWaiterLost ?? 'requeue');
    bindCore(this, core);
    internals.set(this, core);
  }

  /** The recipes' view (`SessionCore`) and this module's (`SessionInternals`): one object per session. */
  #core(onWaiterLost: WaiterLostPolicy): SessionInternals {
    // Getters of the literal read this session's private state (`this` inside them is the literal).
    const session = this;
    return {
      backend: this.#driver,
      onWaiterLost,
      get reporting() {
        return session.#reporting;
      },
      get deadline() {
        return session.#deadlineAt();
      },
      get waitingCount() {
        return session.#waiting.size;
      },
      enter: () => this.#enter(),
      hold: (hold) => this.#hold(hold),
      checkDeadline: () => this.#checkDeadline(),
      waiting: (waiting) => this.#addWaiting(waiting),
      report: (event) => this.#tell('lock', event),
      describe: (queue) => this.#driver.describe(queue),
      replacedBy: (next) => this.#tell('replaced', next),
    };
  }

  /** When the session stops being safe to rely on (a `performance.now()` reading). */
  #deadlineAt(): number {
    return this.#lastAck + this.#driver.timeoutMs - this.#deadlineMarginMs;
  }

  /** One timer, moved forward lazily: it fires at the deadline and re-arms if an ack came meanwhile. */
  #armDeadline(): void {
    if (!Number.isFinite(this.#driver.timeoutMs) || this.#state === 'lost' || this.#state === 'closed') return;
    const wait = this.#deadlineAt() - performance.now();
    if (wait <= 0) {
      const silent = Math.round(performance.now() - this.#lastAck);
      const reason = new SessionLostError(
        `no answer from the server for ${silent} ms (session timeout ${this.#driver.timeoutMs} ms)`,
      );
      this.#driver.abandon(reason);
      this.#onStatus('lost', reason);
      return;
    }
    this.#deadline = setTimeout(() => this.#armDeadline(), wait);
    this.#deadline.unref();
  }

  /** {@inheritDoc Session.id} */
  get id(): string {
    return this.#driver.id;
  }

  /** {@inheritDoc Session.state} */
  get state(): SessionState {
    return this.#state;
  }

  /** {@inheritDoc Session.timeoutMs} */
  get timeoutMs(): number {
    return this.#driver.timeoutMs;
  }

  /** {@inheritDoc Session.signal} */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** {@inheritDoc Session.on} */
  on(event: SessionEvent, listener: SessionListener): this {
    this.#events.on(event, listener as (...args: unknown[]) => void);
    if (event === 'lock') this.#reporting = true;
    return this;
  }

  /** {@inheritDoc Session.off} */
  off(event: SessionEvent, listener: SessionListener): this {
    this.#events.off(event, listener as (...args: unknown[]) => void);
    if (event === 'lock') this.#reporting = this.#events.listenerCount('lock') > 0;
    return this;
  }

  /**
   * Listeners called from inside a backend or recipe step must not be able to break that step (a
   * state listener that threw would have left holders standing on a suspension with onSuspend
   * 'abort', or a request unsettled, or a lock release half done): a listener's error is rethrown on
   * its own tick as an uncaught exception, as Node's EventTarget does.
   */
  #tell(name: SessionEvent, ...args: unknown[]): void {
    for (const listener of this.#events.listeners(name) as ((...args: unknown[]) => void)[]) {
      try {
        listener(...args);
      } catch (error) {
        process.nextTick(() => {
          throw error;
        });
      }
    }
  }

  #enter(): () => void {
    if (this.#closing !== undefined || this.#state === 'closed') throw new ClosedError();
    if (this.#state === 'lost') throw new SessionLostError();
    this.#active += 1;
    let left = false;
    return () => {
      if (left) return;
      left = true;
      this.#active -= 1;
      if (this.#active === 0) this.#idle?.();
    };
  }

  #hold(hold: Hold): () => void {
    // A grant the event loop reaches only after the deadline (a stalled process, a late timer) must not
    // start a belief: the server may already have expired the session and granted the next holder.
    this.#checkDeadline();
    if (this.#controller.signal.aborted) {
      hold.lose(this.#controller.signal.reason as Error);
      return () => undefined;
    }
    if (this.#state === 'suspended' && this.#onSuspend === 'abort') {
      // Granted while the connection is down (etcd serves requests while its keepalive stream is not).
      this.#holds.add(hold);
      this.#dropHolds();
      return () => this.#holds.delete(hold);
    }
    this.#holds.add(hold);
    return () => this.#holds.delete(hold);
  }

  #checkDeadline(): void {
    if (performance.now() >= this.#deadlineAt()) this.#armDeadline();
  }

  #addWaiting(waiting: Waiting): () => void {
    this.#waiting.add(waiting);
    return () => this.#waiting.delete(waiting);
  }

  /**
   * Closes the session in order: waiters give up (their acquires reject with `ClosedError`), held
   * locks are released (their signals abort with `LockLostError`), then the server session ends.
   * Idempotent: every call returns the same promise.
   */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    const reason = new ClosedError();
    this.#abortAll(reason);
    // Waiters see the aborted session signal and withdraw their entries; holds are released here.
    await Promise.allSettled([...this.#holds].map((hold) => hold.release()));
    if (this.#active > 0) await new Promise<void>((resolve) => (this.#idle = resolve));
    await this.#driver.close();
    clearTimeout(this.#deadline);
    clearInterval(this.#holdCheck);
    this.#setState('closed');
  }

  #onStatus(status: ConnectionStatus, cause?: unknown): void {
    if (this.#state === 'closed' || this.#state === 'lost') return;
    if (status === 'lost') {
      const reason =
        cause instanceof SessionLostError ? cause : new SessionLostError('the session was lost', { cause });
      clearTimeout(this.#deadline);
      clearInterval(this.#holdCheck);
      this.#abortAll(reason);
      if (this.#closing === undefined) this.#setState('lost');
      return;
    }
    if (this.#closing !== undefined) return;
    const previous = this.#state;
    this.#setState(status);
    if (status === 'suspended' && previous === 'connected' && this.#onSuspend === 'abort') this.#dropHolds();
    if (status === 'connected' && previous === 'suspended') void this.#confirmEntries();
  }

  /** onSuspend 'abort': holders stop at once; their entries are deleted as soon as the server is back. */
  #dropHolds(): void {
    const reason = new SessionLostError('the connection to the server was lost and onSuspend is "abort"');
    for (const hold of [...this.#holds]) {
      hold.lose(reason);
      void hold.release().catch(() => undefined);
    }
  }

  /**
   * After a reconnect every hold and every waiting entry is checked on the server: a hold whose entry
   * is gone is lost; a waiter whose entry is gone is told at once instead of when its blocker leaves.
   */
  async #confirmEntries(): Promise<void> {
    await this.#confirmHolds();
    for (const waiting of [...this.#waiting]) {
      // A failed confirm means the session itself is going; its signal reaches the waiter.
      if (!(await this.#driver.confirm(waiting.entry).catch(() => true))) waiting.vanished();
    }
  }

  /**
   * Each hold is checked on the server; one whose entry is gone (not by its own release) is lost, and
   * no longer checked: nothing of it is left on the server (its release, if ever made, sends nothing).
   */
  async #confirmHolds(): Promise<void> {
    for (const hold of [...this.#holds]) {
      try {
        if (!(await this.#driver.confirm(hold.entry)) && !hold.releasing) {
          // Gone while the session lives: deleted by another session (a force release, an operator).
          hold.lose(new EntryGoneError(hold.entry.key));
          this.#holds.delete(hold);
        }
      } catch (error) {
        // A hold being released was given up by its holder: its signal must not abort afterwards.
        if (!hold.releasing)
          hold.lose(
            error instanceof Error ? error : new SessionLostError('could not confirm the entry', { cause: error }),
          );
      }
    }
  }

  /**
   * Holds are confirmed every sixth of the session timeout while the session is connected: an entry
   * deleted by another client or an operator is noticed within that, without a watch (and a request)
   * per acquisition. The fencing token covers the window, as it does a server-side expiry.
   */
  #checkHoldsNow(): void {
    if (this.#checkingHolds || this.#holds.size === 0 || this.#state !== 'connected' || this.#closing !== undefined)
      return;
    this.#checkingHolds = true;
    void this.#confirmHolds().finally(() => (this.#checkingHolds = false));
  }

  #abortAll(reason: Error): void {
    if (!this.#controller.signal.aborted) this.#controller.abort(reason);
    for (const waiting of [...this.#waiting]) waiting.ended(this.#controller.signal.reason as Error);
    for (const hold of this.#holds) hold.lose(reason);
  }

  #setState(state: SessionState): void {
    const previous = this.#state;
    if (previous === state) return;
    this.#state = state;
    this.#tell('state', state, previous);
    tellSessionState(this, state, previous);
  }
}

type SessionEvent = 'state' | 'replaced' | 'lock' | 'foreign';
type SessionListener = StateListener | ((next: Session) => void) | LockListener | ((found: ForeignKey) => void);

/** What this package's own code (connect, inspect) and its tests reach of a session, beyond `SessionCore`. */
export interface SessionInternals extends SessionCore {
  /** When the session stops being safe to rely on (a `performance.now()` reading). */
  readonly deadline: number;
  /** For benchmarks: the waits registered with the session now (one per queued acquire). */
  readonly waitingCount: number;
  /** What the server says about each entry of a queue (`baton inspect`). */
  describe(queue: string): Promise<EntryInfo[]>;
  /** Announces the session that replaces this lost one (`reconnectAfterLoss`). */
  replacedBy(next: Session): void;
}

const internals = new WeakMap<object, SessionInternals>();

/** The internals of a session made by `connect()`; throws `TypeError` for anything else. */
export function internalsOf(session: Session): SessionInternals {
  const found = internals.get(session);
  if (found === undefined) throw new TypeError('not a session from connect()');
  return found;
}

export type { ForeignKey };

export interface SessionOptions {
  /** See the constructor. Default: an eighth of the session timeout. */
  readonly deadlineMarginMs?: number;
  /**
   * What holders do while the connection is down but the session may live: 'wait' keeps their locks
   * until the deadline; 'abort' aborts their signals at once and gives the entries back on reconnect.
   */
  readonly onSuspend?: 'wait' | 'abort';
  /** A waiter whose entry vanished while the session lives: 'requeue' (default) or 'fail'. */
  readonly onWaiterLost?: WaiterLostPolicy;
}

import { AccessDeniedError, ClosedError, type SessionLostError } from '../../recipes/errors.js';
import { backoff } from '../backoff.js';
import type { DriverEvents } from '../driver-port.js';
import { closeLimitMs } from '../timing.js';
import { ForeignReporter } from './foreign.js';
import { InFlight, type Recover, type Start } from './requests.js';

/** Where a driver's session stands: in use, lost (expired, revoked, abandoned) or closed by its user. */
export type DriverLife = 'open' | 'lost' | 'closed';

/** How a backend's failures read: what one backend knows of its client's errors. */
export interface FailurePolicy {
  /** The request failed on the way (a lost connection or reply) and may be sent again. */
  retriable(error: unknown): boolean;
  /** The failure in the recipes' terms (keeping the client's error as `cause`). No side effect. */
  map(error: unknown): Error;
  /** The server says the session is gone: the session is lost before the request's caller hears of it. */
  sessionGone(error: unknown): boolean;
  /** The error a request meets once the session was lost (the loss itself may have had another reason). */
  lostError(cause?: unknown): SessionLostError;
}

/** What a driver does at the two ends of its session's life, on top of what the core does. */
export interface EndHooks {
  /** The session ends: the driver stops its timers and fails its waiters with `reason`. */
  onEnd(reason: Error): void;
  /** The session was lost (not closed by its user): the driver lets go of its client. */
  onLost(): void;
}

/**
 * One withdraw of an entry of ours, as `DriverCore.withdraw` sends it until it is done: the server's
 * delete, and what the driver notes once it is answered.
 */
export interface WithdrawSteps {
  /** The entry's key, as an error names it. */
  readonly key: string;
  /** One attempt's delete, made again for each attempt (etcd guards the attempts after a doubtful one). */
  attempt(): Start<unknown>;
  /** The delete was answered, or found the entry gone: the driver forgets the entry. */
  done(): void;
  /** Whether a failure says the entry is gone already (ZooKeeper's NO_NODE); none by default. */
  gone?(error: unknown): boolean;
  /** A failed attempt, before it is retried or thrown (etcd notes the delete's doubtful fate). */
  failed?(error: unknown): void;
  /** Whether sending the delete again may help; the failure policy's `retriable` by default. */
  retriable?(error: unknown): boolean;
}

/** What a driver's server does when its user closes the session (see `DriverCore.close`). */
export interface Closing {
  /** Ends the session on the server (its entries go with it), given up at `until` (a `Date.now()` time). */
  onServer(until: number): Promise<void>;
  /**
   * Frees the connections, after `onServer` or, if the session had ended before, without it. None for
   * ZooKeeper: its `onServer` lets go of the socket, and after a loss its hang-up does.
   */
  disconnect?(): void | Promise<void>;
}

/**
 * The skeleton every driver shares: its status, its reports to the session, the requests it has in
 * flight, and the retry and failure mapping around each request. A backend brings its failure policy
 * and its end hooks; everything it sends goes through `send` or `retry`, so that the session's end
 * settles every request, and a reply saying the session is gone loses it at once.
 */
export class DriverCore {
  #status: DriverLife = 'open';
  #events: DriverEvents | undefined;
  readonly foreign = new ForeignReporter();
  readonly #failures: FailurePolicy;
  readonly #hooks: EndHooks;
  readonly #requests: InFlight;
  readonly #beforeSend: (() => void) | undefined;

  /**
   * `beforeSend`, if given, runs before each request `send` hands to the client (ZooKeeper's request
   * pipeline prepares the connection with it; see `sendPrepared`).
   */
  constructor(failures: FailurePolicy, hooks: EndHooks, beforeSend?: () => void) {
    this.#failures = failures;
    this.#hooks = hooks;
    this.#beforeSend = beforeSend;
    this.#requests = new InFlight((error) => this.#onRequestFailed(error));
  }

  get status(): DriverLife {
    return this.#status;
  }

  get isOpen(): boolean {
    return this.#status === 'open';
  }

  /** Whether the session has ended (every request in flight then settled with its end). */
  get ended(): boolean {
    return this.#requests.ended;
  }

  /** How many requests are in flight. */
  get inFlight(): number {
    return this.#requests.size;
  }

  /** The session's listener, once attached (see `Driver.attach`). */
  get events(): DriverEvents | undefined {
    return this.#events;
  }

  attach(events: DriverEvents): void {
    this.#events = events;
    this.foreign.attach(events);
  }

  /**
   * A request that settles when the session ends, whatever the client does with it; a failure goes to
   * `recover` if given (see `InFlight.call`).
   */
  send<T>(request: Start<T>, recover?: Recover<T>): Promise<T> {
    this.#beforeSend?.();
    return this.#requests.call(request, recover);
  }

  /** `send` without the pipeline's preparation, for requests the caller prepared itself (sent together). */
  sendPrepared<T>(request: Start<T>, recover?: Recover<T>): Promise<T> {
    return this.#requests.call(request, recover);
  }

  /**
   * Sends a request again while it fails only on the way (the client queues it until it has
   * reconnected); any other failure is mapped onto the recipes' errors.
   */
  retry<T>(request: Start<T>): Promise<T> {
    if (this.#status !== 'open') return this.#retryAfter(request, 0); // throws the session's end
    // The first attempt without an async frame or a `.then` of its own: most requests need no other.
    return this.send(request, (error) => {
      if (!this.#failures.retriable(error)) throw this.#failures.map(error);
      return backoff(0).then(() => this.#retryAfter(request, 1));
    });
  }

  async #retryAfter<T>(request: Start<T>, from: number): Promise<T> {
    for (let attempt = from; ; attempt += 1) {
      this.assertOpen();
      try {
        return await this.send(request);
      } catch (error) {
        if (!this.#failures.retriable(error)) throw this.#failures.map(error);
        await backoff(attempt);
      }
    }
  }

  /** Whether a request failed only on the way, so that sending it again may succeed (`FailurePolicy.retriable`). */
  retriable(error: unknown): boolean {
    return this.#failures.retriable(error);
  }

  /** A failure in the recipes' terms (the backend's `FailurePolicy.map`). */
  mapFailure(error: unknown): Error {
    return this.#failures.map(error);
  }

  /**
   * A failure met outside `send` (a watch stream the client keeps open): a reply saying the session is
   * gone loses the session at once, as it does for a request, and the failure comes back in the
   * recipes' terms.
   */
  streamFailed(error: unknown): Error {
    this.#onRequestFailed(error);
    return this.#failures.map(error);
  }

  /** Throws what a request made now would meet: the session's loss, or its close. */
  assertOpen(): void {
    if (this.#status === 'lost') throw this.#failures.lostError();
    if (this.#status === 'closed') throw new ClosedError();
  }

  /** The error a wait begun now would meet, if the session has ended. */
  endError(): Error | undefined {
    if (this.#status === 'lost') return this.#failures.lostError();
    if (this.#status === 'closed') return new ClosedError();
    return undefined;
  }

  /** Stops using the session: the driver's end hook runs, and every request in flight fails with `reason`. */
  end(status: 'lost' | 'closed', reason: Error): void {
    this.#status = status;
    this.#hooks.onEnd(reason);
    this.#requests.end(reason);
  }

  /**
   * Deletes an entry of ours, sent again while the delete fails on the way, until it is answered or
   * the session ends (the server then removes the entry with the session). A delete refused for good
   * is thrown (see `withdrawRefused`). The first attempt has no async frame of its own: most deletes
   * need no other.
   */
  withdraw(steps: WithdrawSteps): Promise<void> {
    if (!this.isOpen) return Promise.resolve();
    return this.send(steps.attempt()).then(
      () => steps.done(),
      (error: unknown) => this.#withdrawFailed(steps, error),
    );
  }

  async #withdrawFailed(steps: WithdrawSteps, failure: unknown): Promise<void> {
    for (let attempt = 0, error = failure; ; attempt += 1) {
      if (steps.gone?.(error) === true) return steps.done();
      if (this.ended || this.#failures.sessionGone(error)) return; // the entry went with the session
      steps.failed?.(error);
      const retriable = steps.retriable?.(error) ?? this.#failures.retriable(error);
      if (!retriable) throw withdrawRefused(steps.key, this.#failures.map(error));
      await backoff(attempt);
      if (!this.isOpen) return;
      try {
        await this.send(steps.attempt());
        return steps.done();
      } catch (next) {
        error = next;
      }
    }
  }

  /**
   * The session's deadline passed without word from the server: the session ends as lost, and `drop`
   * lets go of the connection without a word to the server (it stopped answering). Once only.
   */
  abandon(reason: Error, drop: () => void): void {
    if (!this.isOpen) return;
    this.end('lost', reason);
    drop();
  }

  /**
   * The user closes the session: every request in flight and every wait fails with `ClosedError`;
   * if the session was open, the server ends it within the close limit (`closeLimitMs`); then the
   * connections are freed. Idempotent.
   */
  async close(timeoutMs: number, closing: Closing): Promise<void> {
    if (this.#status === 'closed') return;
    const wasOpen = this.isOpen;
    this.end('closed', new ClosedError());
    try {
      if (wasOpen) await closing.onServer(Date.now() + closeLimitMs(timeoutMs));
    } finally {
      await closing.disconnect?.();
    }
  }

  /** The session is gone (expired, revoked, or a reply said so): ended, the client let go of, the session told. */
  lose(reason: SessionLostError): void {
    if (this.#status !== 'open') return;
    this.end('lost', reason);
    // Holders are told first: the driver's clean-up may free entries that still stood for them (on
    // Redis a session found gone by one key may still be alive by its keys in locks).
    this.#events?.status('lost', reason);
    this.#hooks.onLost();
  }

  /**
   * Every failed request passes here before its caller sees the error. A reply saying the session is
   * gone can arrive while the connection still stands, before the client reports it: the session is
   * lost from that moment, so that no caller is told of the loss while the session still looks alive.
   */
  #onRequestFailed(error: unknown): void {
    if (this.#status === 'open' && this.#failures.sessionGone(error)) this.lose(this.#failures.lostError(error));
  }
}

/**
 * The error of a withdraw (a release, a give-up) whose delete the server refused for good: the
 * credentials no longer allow it (an ACL or a role changed). Retrying would not help, so the withdraw
 * gives up at once and the entry is left to the session's end, when the server removes it with the
 * session's other entries; the message says so. Any other failure is returned as it is.
 */
export function withdrawRefused(key: string, failure: Error): Error {
  if (!(failure instanceof AccessDeniedError)) return failure;
  return new AccessDeniedError(
    `${failure.message}; the entry ${key} stays in its queue until this session ends (close the session to free the queue)`,
    { cause: failure.cause },
  );
}

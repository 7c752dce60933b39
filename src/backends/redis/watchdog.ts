import type { Redis } from 'ioredis';
import { SessionLostError } from '../../../recipes/errors.js';
import type { DriverCore } from '../core.js';

/**
 * The session's watchdog: it renews the session key's expiry with `PEXPIRE key timeout`, which only
 * renews a key that still exists (it never creates one), so a renewal that arrives after the key
 * expired cannot bring the session back: it answers 0 and the session is lost. `PEXPIRE` is not
 * refused at `maxmemory` under `noeviction` (`SET` is), so a full server does not lose every session. Each answered renewal is an
 * acknowledgement at its send time (the session's deadline counts from it). A renewal left
 * unanswered for a third of the timeout means the connection is silent: the session is suspended
 * and the connection dropped, so that the client dials again.
 */
export class Watchdog {
  readonly #client: Redis;
  readonly #key: string;
  readonly #timeoutMs: number;
  readonly #core: DriverCore;
  readonly #everyMs: number;
  readonly #onSilent: () => void;
  #timer: NodeJS.Timeout | undefined;
  /** The send time of the renewal in flight. */
  #sentAt: number | undefined;
  #suspended = false;

  constructor(client: Redis, key: string, timeoutMs: number, core: DriverCore, onSilent: () => void) {
    this.#client = client;
    this.#key = key;
    this.#timeoutMs = timeoutMs;
    this.#core = core;
    this.#onSilent = onSilent;
    this.#everyMs = Math.max(Math.floor(timeoutMs / 4), 25);
  }

  start(): void {
    this.#timer = setInterval(() => this.renew(), this.#everyMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The connection went down: the session may live, but cannot be renewed now. */
  suspend(): void {
    if (this.#suspended || !this.#core.isOpen) return;
    this.#suspended = true;
    this.#core.events?.status('suspended');
  }

  /** Sends a renewal now unless one is in flight (as soon as the connection is back, too). */
  renew(): void {
    if (!this.#core.isOpen) return;
    if (this.#sentAt !== undefined) {
      if (performance.now() - this.#sentAt > this.#timeoutMs / 3) {
        this.suspend();
        this.#onSilent();
      }
      return;
    }
    if (this.#client.status !== 'ready') return;
    const sentAt = performance.now();
    this.#sentAt = sentAt;
    this.#client.pexpire(this.#key, this.#timeoutMs).then(
      (reply) => {
        if (this.#sentAt === sentAt) this.#sentAt = undefined;
        if (!this.#core.isOpen) return;
        if (reply === 0) {
          this.#core.lose(new SessionLostError(`Redis session key ${this.#key} expired or was deleted`));
          return;
        }
        if (this.#suspended) {
          this.#suspended = false;
          this.#core.events?.status('connected');
        }
        this.#core.events?.ack(sentAt);
      },
      () => {
        if (this.#sentAt === sentAt) this.#sentAt = undefined;
      },
    );
  }
}

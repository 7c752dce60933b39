import { SessionLostError } from '../../../recipes/errors.js';
import { backoff } from '../../backoff.js';
import { keepAlivePaceMs } from '../../timing.js';
import type { DriverCore } from '../core.js';
import { fromPromise } from '../requests.js';

/** A session's lease as the keep-alive renews it: the backend's renewal, and the words for its loss. */
export interface Lease {
  /** The backend's name in messages (`PostgreSQL`, `MySQL`). */
  readonly title: string;
  /** The session's id as users see it. */
  readonly id: string;
  /** Renews the lease once, on the connection that carries the renewals: the rows it touched. */
  renew(): Promise<number>;
}

/**
 * The liveness of a session that is a leased row (PostgreSQL, MySQL): a heartbeat that renews the
 * lease, whose answer is the session's acknowledgement and whose failure a suspension; after a
 * failure, the renewals' connection is made again at once rather than at the next beat.
 */
export class KeepAlive {
  readonly #core: DriverCore;
  readonly #lease: Lease;
  readonly #timer: NodeJS.Timeout;
  #suspended = false;
  /** A reconnection of the renewals' connection is under way (`#reconnectSoon`). */
  #reconnecting = false;

  /**
   * Renews at the keep-alive pace of the session's timeout `timeoutMs` (see timing.ts); `beat` runs at
   * each beat, beside the renewal (the own entries' look at unsettled queues).
   */
  constructor(core: DriverCore, lease: Lease, timeoutMs: number, beat: () => void) {
    this.#core = core;
    this.#lease = lease;
    this.#timer = setInterval(() => {
      void this.renew().catch(() => undefined);
      beat();
    }, keepAlivePaceMs(timeoutMs));
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /**
   * Renews the lease, unless it has run out (then the session is lost: an expired lease is never
   * renewed). Its answer is the session's acknowledgement, its failure a suspension.
   */
  async renew(): Promise<void> {
    const core = this.#core;
    if (!core.isOpen) return;
    const sentAt = performance.now();
    let renewed: boolean;
    try {
      renewed = (await core.send(fromPromise(() => this.#lease.renew()))) === 1;
    } catch (error) {
      if (core.isOpen && core.retriable(error)) this.down();
      throw error;
    }
    if (!renewed) {
      const reason = new SessionLostError(
        `${this.#lease.title} session ${this.#lease.id} expired or was removed (its lease was not renewed in time)`,
      );
      core.lose(reason);
      throw reason;
    }
    if (this.#suspended) {
      this.#suspended = false;
      core.events?.status('connected');
    }
    core.events?.ack(sentAt);
  }

  /** The renewals' connection broke: the session is suspended until a renewal is answered again. */
  down(): void {
    const core = this.#core;
    if (!core.isOpen) return;
    if (!this.#suspended) {
      this.#suspended = true;
      core.events?.status('suspended');
    }
    this.#reconnectSoon();
  }

  /**
   * The renewals' connection broke: make it again now (a renewal on it), not at the next heartbeat a
   * quarter lease later, tried again with a short growing pause until it is back or the session ends.
   */
  #reconnectSoon(): void {
    if (this.#reconnecting) return;
    this.#reconnecting = true;
    const core = this.#core;
    void (async () => {
      for (let attempt = 0; core.isOpen && this.#suspended; attempt += 1) {
        await backoff(attempt);
        if (!core.isOpen || !this.#suspended) return;
        await this.renew().catch(() => undefined);
      }
    })().finally(() => (this.#reconnecting = false));
  }
}

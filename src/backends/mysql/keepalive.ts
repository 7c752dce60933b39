import { SessionLostError } from '../../../recipes/errors.js';
import { backoff } from '../../backoff.js';
import type { DriverCore } from '../core.js';
import { fromPromise } from '../requests.js';
import { retriable } from './failures.js';
import type { Link } from './link.js';
import { STATEMENTS } from './statements.js';

/** What the keep-alive needs of its driver. */
export interface KeepAliveHost {
  readonly core: DriverCore;
  /** The heartbeat's own connection (renewals never wait behind the requests). */
  readonly link: Link;
  /** The session's row id, and its id as users see it. */
  readonly session: string;
  readonly id: string;
  /** At each beat, beside the renewal. */
  beat(): void;
}

/**
 * The session's liveness: a heartbeat that renews the session's lease, whose answer is the session's
 * acknowledgement and whose failure a suspension; after a failure the connection is made again at once
 * rather than at the next beat.
 */
export class KeepAlive {
  readonly #host: KeepAliveHost;
  readonly #timer: NodeJS.Timeout;
  #suspended = false;
  #reconnecting = false;

  constructor(host: KeepAliveHost, everyMs: number) {
    this.#host = host;
    this.#timer = setInterval(() => {
      void this.renew().catch(() => undefined);
      host.beat();
    }, everyMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** Renews the lease, unless it has run out (then the session is lost: an expired lease is never renewed). */
  async renew(): Promise<void> {
    const { core, link, session } = this.#host;
    if (!core.isOpen) return;
    const sentAt = performance.now();
    let renewed: boolean;
    try {
      renewed = (await core.send(fromPromise(() => link.changed(STATEMENTS.renew, [session])))) === 1;
    } catch (error) {
      if (core.isOpen && retriable(error)) this.down();
      throw error;
    }
    if (!renewed) {
      const reason = new SessionLostError(
        `MySQL session ${this.#host.id} expired or was removed (its lease was not renewed in time)`,
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

  /** The heartbeat's connection broke: the session is suspended until a renewal is answered again. */
  down(): void {
    const { core } = this.#host;
    if (!core.isOpen) return;
    if (!this.#suspended) {
      this.#suspended = true;
      core.events?.status('suspended');
    }
    this.#reconnectSoon();
  }

  #reconnectSoon(): void {
    if (this.#reconnecting) return;
    this.#reconnecting = true;
    const { core } = this.#host;
    void (async () => {
      for (let attempt = 0; core.isOpen && this.#suspended; attempt += 1) {
        await backoff(attempt);
        if (!core.isOpen || !this.#suspended) return;
        await this.renew().catch(() => undefined);
      }
    })().finally(() => (this.#reconnecting = false));
  }
}

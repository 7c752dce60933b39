import { type Etcd3, EtcdLeaseInvalidError, isRecoverableError } from 'etcd3';

import { SessionLostError } from '../../../recipes/errors.js';
import { backoff } from '../../backoff.js';
import { keepAlivePaceMs } from '../../timing.js';
import type { DriverCore } from '../core.js';
import type { Start } from '../requests.js';
import { KeepAliveStream } from './keepalive-stream.js';
import type { Members } from './members.js';

/** What the lease needs of its driver, beyond its core. */
export interface KeepAliveHost {
  readonly client: Etcd3;
  readonly members: Members;
  /** The lease id, decimal (etcd3's form) and hex (the session id). */
  readonly lease: string;
  readonly id: string;
  readonly timeoutMs: number;
  /** A unary request in the driver's form (`Start`), each attempt with its deadline. */
  rpc<T>(request: () => Promise<T>): Start<T>;
  /** A deadline for one attempt of a request. */
  attempt(): { deadline: number };
}

/**
 * The session's lease: kept alive (the keepalive stream's answers are the session's acknowledgements,
 * its silence a suspension), its loss noticed (the stream says it is gone, or a confirm finds it so),
 * and revoked at close.
 */
export class KeepAlive {
  readonly #host: KeepAliveHost;
  readonly #core: DriverCore;
  readonly #keepAlive: KeepAliveStream;
  /** The keepalive stream is down: the lease may live, but we cannot renew it now. */
  #suspended = false;

  constructor(host: KeepAliveHost, core: DriverCore) {
    this.#host = host;
    this.#core = core;
    this.#keepAlive = new KeepAliveStream(
      host.members.leaseClient(host.client),
      host.members,
      host.lease,
      keepAlivePaceMs(host.timeoutMs),
      {
        ack: (sentAt) => {
          if (this.#suspended) {
            this.#suspended = false;
            core.events?.status('connected');
          }
          core.events?.ack(sentAt);
        },
        down: () => {
          if (this.#suspended || !core.isOpen) return;
          this.#suspended = true;
          core.events?.status('suspended');
        },
        gone: () => core.lose(new SessionLostError(`etcd lease ${host.id} expired or was revoked`)),
      },
    );
  }

  /** The member the keepalive stream is dialled to. */
  get member(): string | undefined {
    return this.#keepAlive.member;
  }

  /** How many keepalive streams were opened. */
  get opens(): number {
    return this.#keepAlive.opens;
  }

  stop(): void {
    this.#keepAlive.stop();
  }

  /** Our entry is gone: if the lease went with it, the session is lost now rather than at the next keepalive. */
  async assertAlive(): Promise<void> {
    const { client, lease } = this.#host;
    const live = await this.#core.retry(
      this.#host.rpc(() => client.leaseClient.leaseTimeToLive({ ID: lease, keys: false }, this.#host.attempt())),
    );
    if (Number(live.TTL) > 0) return;
    const reason = new SessionLostError(`etcd lease ${this.#host.id} expired or was revoked`);
    this.#core.lose(reason);
    throw reason;
  }

  /**
   * Entries go with the lease at once instead of at its expiry. Each attempt gets its own deadline, so
   * that a member that stopped answering costs one attempt, not the whole budget; past the budget the
   * lease is left to expire on its own.
   */
  async revoke(until: number): Promise<void> {
    const { client, members, lease, timeoutMs } = this.#host;
    for (let attempt = 0; Date.now() < until; attempt += 1) {
      try {
        await members.attempt(
          () =>
            client.leaseClient.leaseRevoke({ ID: lease }, { deadline: Math.min(until, this.#host.attempt().deadline) }),
          timeoutMs,
        );
        return;
      } catch (error) {
        if (error instanceof EtcdLeaseInvalidError || !isRecoverableError(error as Error)) return;
        await backoff(attempt);
      }
    }
  }
}

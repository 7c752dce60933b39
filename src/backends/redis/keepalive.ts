import type { Cluster, Redis } from 'ioredis';

import { SessionLostError } from '../../../recipes/errors.js';
import { keepAlivePaceMs, silentAfterMs } from '../../timing.js';
import type { DriverCore } from '../core.js';
import type { LivenessKeys } from './liveness.js';
import type { SubscriberLink } from './subscriber.js';

/** The floor of Redis's renewal and backstop paces, below the other backends' (a test's session may be 100 ms). */
export const REDIS_FLOOR_MS = 25;

/** What the keep-alive does when a connection stays silent. */
export interface SilenceHandlers {
  /** The client's connection: the session is suspended, and both connections are dialled again. */
  client(): void;
  /** The subscriber connection: it is dialled again (the session's renewals are not affected). */
  subscriber(): void;
}

/**
 * The session's keep-alive: it renews the expiry of each of the session's keys (its own and its key in
 * each lock it has entries in, see `LivenessKeys`) with `PEXPIRE key timeout`, which only renews a
 * key that still exists (it never creates one), so a renewal that arrives after a key expired cannot
 * bring the session back: it answers 0 and the session is lost. `PEXPIRE` is not refused at
 * `maxmemory` under `noeviction` (`SET` is), so a full server does not lose every session. On a
 * cluster the keys sit on several nodes: a round is answered once every key's renewal is. Each
 * answered round acknowledges the session at the oldest time any of its keys was last set (the
 * session's deadline counts from it). A round left unanswered for a third of the timeout means the connection is silent: the
 * session is suspended and the connection dropped, so that the client dials again. With each renewal
 * the subscriber connection is sent a `PING` (allowed in subscribe mode): left unanswered as long, it
 * is dropped and dialled again too, so that an idle subscriber a NAT or load balancer forgot does not
 * leave every wait to the backstop. Silence is counted from the later of the send and the
 * connection's last 'ready': a request sent before a reconnect and sent again after it does not make
 * the fresh connection look silent.
 */
export class KeepAlive {
  readonly #client: Redis | Cluster;
  readonly #subscriber: SubscriberLink;
  readonly #liveness: LivenessKeys;
  readonly #timeoutMs: number;
  readonly #core: DriverCore;
  readonly #everyMs: number;
  readonly #onSilent: SilenceHandlers;
  #timer: NodeJS.Timeout | undefined;
  /** The send time of the renewal in flight. */
  #sentAt: number | undefined;
  /** The send time of the subscriber's ping in flight. */
  #pingSentAt: number | undefined;
  /** When each connection was last ready. */
  #clientReadyAt: number;
  #subscriberReadyAt: number;
  #suspended = false;
  /** Stopped for good: a connection coming back must not renew what was let go (a test's stopped watchdog). */
  #stopped = false;

  constructor(
    client: Redis | Cluster,
    subscriber: SubscriberLink,
    liveness: LivenessKeys,
    timeoutMs: number,
    core: DriverCore,
    onSilent: SilenceHandlers,
  ) {
    this.#client = client;
    this.#subscriber = subscriber;
    this.#liveness = liveness;
    this.#timeoutMs = timeoutMs;
    this.#core = core;
    this.#onSilent = onSilent;
    this.#everyMs = keepAlivePaceMs(timeoutMs, REDIS_FLOOR_MS);
    this.#clientReadyAt = this.#subscriberReadyAt = performance.now();
  }

  start(): void {
    this.#timer = setInterval(() => this.renew(), this.#everyMs);
    this.#timer.unref();
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** The connection went down: the session may live, but cannot be renewed now. */
  suspend(): void {
    if (this.#suspended || !this.#core.isOpen) return;
    this.#suspended = true;
    this.#core.events?.status('suspended');
  }

  /** The client's connection is (again) ready: a renewal goes at once. */
  clientReady(): void {
    this.#clientReadyAt = performance.now();
    this.renew();
  }

  /** The subscriber connection is (again) ready. */
  subscriberReady(): void {
    this.#subscriberReadyAt = performance.now();
  }

  /** Sends a renewal now unless one is in flight (as soon as the connection is back, too), and a ping to the subscriber. */
  renew(): void {
    if (!this.#core.isOpen || this.#stopped) return;
    this.#pingSubscriber();
    if (this.#sentAt !== undefined) {
      if (performance.now() - Math.max(this.#sentAt, this.#clientReadyAt) > silentAfterMs(this.#timeoutMs)) {
        this.suspend();
        this.#onSilent.client();
      }
      return;
    }
    if (this.#client.status !== 'ready') return;
    const sentAt = performance.now();
    this.#sentAt = sentAt;
    const keys = this.#liveness.keys();
    Promise.all(keys.map(({ key }) => this.#client.pexpire(key, this.#timeoutMs))).then(
      (replies) => {
        if (this.#sentAt === sentAt) this.#sentAt = undefined;
        if (!this.#core.isOpen) return;
        const gone = keys.find((_, index) => replies[index] === 0);
        if (gone !== undefined) {
          this.#core.lose(new SessionLostError(`Redis session key ${gone.key} expired or was deleted`));
          return;
        }
        if (this.#suspended) {
          this.#suspended = false;
          this.#core.events?.status('connected');
        }
        this.#liveness.renewed(keys, sentAt);
        this.#core.events?.ack(this.#liveness.acknowledge());
      },
      () => {
        if (this.#sentAt === sentAt) this.#sentAt = undefined;
        // A key's node refused or dropped the renewal (on a cluster ioredis gives up on a node that is
        // down within its redirections, so no silence would be seen): the session is not renewed now.
        this.suspend();
      },
    );
  }

  #pingSubscriber(): void {
    if (this.#pingSentAt !== undefined) {
      if (performance.now() - Math.max(this.#pingSentAt, this.#subscriberReadyAt) > silentAfterMs(this.#timeoutMs)) {
        this.#subscriberReadyAt = performance.now(); // given as long again to come back
        this.#onSilent.subscriber();
      }
      return;
    }
    const connection = this.#subscriber.connection;
    if (connection.status !== 'ready') return;
    const sentAt = performance.now();
    this.#pingSentAt = sentAt;
    const settled = (): void => {
      if (this.#pingSentAt === sentAt) this.#pingSentAt = undefined;
    };
    connection.ping().then(settled, settled);
  }
}

/**
 * The options of `connect()` as users see them: the keys every backend reads here, documented key by
 * key; the keys one backend owns in its folder's `public.ts`, and how each is checked in its
 * descriptor (`src/backends/<name>/index.ts`).
 */
import type { BackendConnectOptions } from './backends/public.js';

/**
 * Options of `connect()`. Every key is optional; an unknown key is refused with `InvalidArgumentError`
 * naming the nearest valid one.
 */
export interface ConnectOptions extends BackendConnectOptions {
  /**
   * How long the server keeps the session after it last heard from the client, in ms: ZooKeeper's
   * session timeout (the server clamps it to 2-20 x tickTime), etcd's lease TTL rounded up to whole
   * seconds (unless `ttlSeconds` is given). `session.timeoutMs` is what the server granted. Default 10 000.
   */
  readonly sessionTimeoutMs?: number;
  /**
   * How long to wait for the first connection before `connect()` rejects with `BackendError`, in ms.
   * Default 15 000.
   */
  readonly connectTimeoutMs?: number;
  /**
   * Gives up connecting when it aborts: `connect()` rejects with its reason, and the client opened for
   * it is closed. Only the connect: the session, once open, does not listen to it.
   */
  readonly signal?: AbortSignal;
  /**
   * How long before the server could expire the session the client declares it lost on its own when
   * the server stops answering. Default: an eighth of the negotiated session timeout.
   */
  readonly deadlineMarginMs?: number;
  /**
   * While the connection is down but the session may still live: 'wait' (default) lets holders keep
   * their locks until the deadline; 'abort' aborts their signals at once (the strictest choice) and
   * gives their entries back as soon as the server is reachable again.
   */
  readonly onSuspend?: 'wait' | 'abort';
  /**
   * A waiter whose queue entry vanished while its session lives (deleted by another client or an
   * operator): 'requeue' (default) queues it again at the tail, within the same deadline; 'fail'
   * rejects its acquire with LockLostError.
   */
  readonly onWaiterLost?: 'requeue' | 'fail';
  /**
   * After the session is lost, open a new one (retrying until it succeeds or the old one is closed) and
   * announce it with `session.on('replaced', next => ...)`. Holds never move: take locks again on `next`.
   */
  readonly reconnectAfterLoss?: boolean;
}

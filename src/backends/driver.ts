import type { Backend } from '../../recipes/contract.js';

/** What a backend reports about its connection; the session turns it into user-visible states. */
export type DriverStatus = 'connected' | 'suspended' | 'lost';

export interface DriverEvents {
  status(status: DriverStatus, cause?: unknown): void;
  /**
   * The server answered a request sent at `sentAt` (a `performance.now()` reading), so the session was
   * alive on the server at least until then. The session-loss deadline counts from the latest one.
   */
  ack(sentAt: number): void;
}

/** A backend plus the lifecycle the session needs. One driver per session. */
export interface Driver extends Backend {
  /** The server's session id (ZooKeeper session id in hex, etcd lease id, memory session number). */
  readonly id: string;
  /** How long the server keeps the session after last hearing from us (negotiated); Infinity if forever. */
  readonly timeoutMs: number;
  /** `performance.now()` just before the request that opened the session was sent. */
  readonly openedAt: number;
  /** Receives the driver's reports. Called once, by the session. */
  attach(events: DriverEvents): void;
  /** The session's deadline passed without word from the server: stop using it, fail every waiter. */
  abandon(reason: Error): void;
  /** Ends the server session (entries go with it) and frees every socket and timer. Idempotent. */
  close(): Promise<void>;
}

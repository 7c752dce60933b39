import type { Backend } from '../../recipes/contract.js';

/** What a backend reports about its connection; the session turns it into user-visible states. */
export type DriverStatus = 'connected' | 'suspended' | 'lost';

export interface DriverEvents {
  status(status: DriverStatus, cause?: unknown): void;
}

/** A backend plus the lifecycle the session needs. One driver per session. */
export interface Driver extends Backend {
  /** The server's session id (ZooKeeper session id in hex, etcd lease id, memory session number). */
  readonly id: string;
  /** Called on every connection status change. Set once, by the session. */
  onStatus(listener: DriverEvents['status']): void;
  /** Ends the server session (entries go with it) and frees every socket and timer. Idempotent. */
  close(): Promise<void>;
}

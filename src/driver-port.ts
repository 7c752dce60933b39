/**
 * The port the session needs from a backend's driver: the recipes' `Backend` plus the lifecycle the
 * session drives (attach, abandon, close) and the reports it listens to. Declared beside its consumer,
 * `session.ts`; every driver under `backends/` implements it.
 */
import type { Backend, DescribedEntry } from '../recipes/contract.js';

/** What a backend reports about its connection; the session turns it into user-visible states. */
export type ConnectionStatus = 'connected' | 'suspended' | 'lost';

export interface DriverEvents {
  status(status: ConnectionStatus, cause?: unknown): void;
  /**
   * The server answered a request sent at `sentAt` (a `performance.now()` reading), so the session was
   * alive on the server at least until then. The session-loss deadline counts from the latest one.
   */
  ack(sentAt: number): void;
  /** A key or znode in a queue that baton did not create: ignored by the ordering, reported once per session. */
  foreign(queue: string, key: string): void;
  /** How long before the server could expire the session the session gives up (its deadline margin). */
  readonly deadlineMarginMs?: number;
  /** Whether the session holds or waits for something now (a driver may heartbeat faster meanwhile). */
  busy?(): boolean;
}

/** A backend plus the lifecycle the session needs. One driver per session. */
export interface Driver extends Backend {
  /** The server's session id (see `Session.id`). */
  readonly id: string;
  /** How long the server keeps the session after last hearing from us (negotiated); Infinity if forever. */
  readonly timeoutMs: number;
  /** `performance.now()` just before the request that opened the session was sent. */
  readonly openedAt: number;
  /** Receives the driver's reports. Called once, by the session. */
  attach(events: DriverEvents): void;
  /** The session's deadline passed without word from the server: stop using it, fail every waiter. */
  abandon(reason: Error): void;
  /** What an operator needs to know about each entry of a queue (`baton inspect`), in queue order. */
  describe(queue: string): Promise<EntryInfo[]>;
  /** Ends the server session (entries go with it) and frees every socket and timer. Idempotent. */
  close(): Promise<void>;
}

/** One queue entry as the server describes it (the recipes' `DescribedEntry`, under the drivers' name). */
export type EntryInfo = DescribedEntry;

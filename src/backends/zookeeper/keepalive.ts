import { silentAfterMs } from '../../timing.js';
import type { Start } from '../requests.js';
import type { ZkClient } from './client.js';
import { reachLeaderStart } from './client.js';
import { destroySocket, onConnecting } from './client/instance.js';
import { HeartbeatPace } from './heartbeat-pace.js';

/** What the heartbeat needs of its driver. */
export interface KeepAliveHost {
  /** Whether the session is still in use. */
  isOpen(): boolean;
  /** Whether the connection is down (the client is reconnecting). */
  isSuspended(): boolean;
  /** Sends a request through the driver's pipeline. */
  send<T>(request: Start<T>): Promise<T>;
  /** Whether the session holds or waits for something now: heartbeats then go at the busy pace. */
  busy(): boolean;
  /** The leader had heard of the session by `credit` (a `performance.now()` reading). */
  ack(credit: number): void;
}

/**
 * The session's liveness: node-zookeeper-client never reports a server that stops answering, and hides
 * its pings; this heartbeat is baton's own ping, whose replies move the session's loss deadline
 * forward, at the pace and with the credit of heartbeat-pace.ts. A silent connection is dropped a
 * third of the timeout after its last unanswered heartbeat, leaving time to reconnect elsewhere before
 * the deadline.
 */
export class KeepAlive {
  readonly #client: ZkClient;
  readonly #host: KeepAliveHost;
  readonly #timeoutMs: number;
  readonly #pace: HeartbeatPace;
  /** When the heartbeats still waiting for their answers were sent, oldest first. */
  readonly #unanswered: number[] = [];
  /**
   * No later than the leader last heard of the session, give or take the ping lag the margin covers:
   * the send time of the last heartbeat, or of the last connect request (at first, the session's open).
   */
  #touchedAt: number;
  /** When the client last began a connection (wrote a connect request). */
  #connectingAt: number;

  constructor(client: ZkClient, timeoutMs: number, openedAt: number, host: KeepAliveHost) {
    this.#client = client;
    this.#host = host;
    this.#timeoutMs = timeoutMs;
    this.#touchedAt = openedAt;
    this.#connectingAt = openedAt;
    onConnecting(client, () => (this.#connectingAt = performance.now()));
    this.#pace = new HeartbeatPace(timeoutMs, () => this.#beat());
  }

  /** When the client last wrote a connect request. */
  get connectingAt(): number {
    return this.#connectingAt;
  }

  /** Whether the heartbeat is a `sync`, which only a member in touch with the leader answers. */
  get reachesLeader(): boolean {
    return reachLeaderStart(this.#client, '/').leader;
  }

  /**
   * The client connected: the member re-validated the session with the leader before it answered the
   * connect request, as good as a heartbeat sent when that request was (see `#beat`).
   */
  connected(): void {
    this.#touchedAt = Math.max(this.#touchedAt, this.#connectingAt);
  }

  /** The session's deadline margin: heartbeats while busy, and every answer's credit, follow half of it. */
  setMargin(marginMs: number): void {
    this.#pace.setMargin(marginMs);
  }

  stop(): void {
    this.#pace.stop();
  }

  #beat(): void {
    if (!this.#host.isOpen()) return;
    const oldest = this.#unanswered[0];
    // The client never gives up on a server that stopped answering (a hung member, or a connection
    // the server dropped without closing it). Like ZooKeeper's own Java client, drop a connection
    // that has been silent for a third of the session timeout, so that the client moves to another
    // member while the session can still be saved there.
    if (
      oldest !== undefined &&
      !this.#host.isSuspended() &&
      performance.now() - oldest > silentAfterMs(this.#timeoutMs)
    ) {
      destroySocket(this.#client);
      return;
    }
    // Sent on schedule even while an earlier one waits for a slow answer (two at most): each one that
    // reaches a follower tells the leader, with the follower's next ping answer, that the session lives.
    if (this.#unanswered.length >= 2) return;
    const sentAt = performance.now();
    if (!this.#pace.due(sentAt, this.#touchedAt, this.#host.busy())) return;
    // Credited no later than one busy interval after the previous heartbeat (or the reconnect, which the
    // leader itself re-validates): see heartbeat-pace.ts.
    const credit = this.#pace.credit(sentAt, this.#touchedAt);
    this.#touchedAt = sentAt;
    this.#unanswered.push(sentAt);
    const settled = (): void => {
      const at = this.#unanswered.indexOf(sentAt);
      if (at !== -1) this.#unanswered.splice(at, 1);
    };
    // A sync, not a read: a follower cut off from the leader goes on answering reads (until it notices,
    // syncLimit x tickTime later) while the leader, which expires sessions, hears nothing of ours.
    this.#host.send(reachLeaderStart(this.#client, '/').start).then(() => {
      settled();
      this.#host.ack(credit);
    }, settled);
  }
}

import type { Start } from '../requests.js';
import type { ZkClient } from './client.js';
import { destroySocket, onConnecting } from './instance.js';
import { reachLeaderStart } from './client.js';

/** What the heartbeat needs of its driver. */
export interface HeartbeatHost {
  /** Whether the session is still in use. */
  isOpen(): boolean;
  /** Whether the connection is down (the client is reconnecting). */
  isSuspended(): boolean;
  /** Sends a request through the driver's pipeline. */
  send<T>(request: Start<T>): Promise<T>;
  /** The leader had heard of the session by `credit` (a `performance.now()` reading). */
  ack(credit: number): void;
}

/**
 * The session's liveness: node-zookeeper-client never reports a server that stops answering, and hides
 * its pings; this heartbeat is baton's own ping, whose replies move the session's loss deadline
 * forward. Every sixth of the timeout: a silent connection is then dropped between a third and a half
 * of the timeout after its last unanswered heartbeat, leaving time to reconnect elsewhere before the
 * deadline.
 */
export class Heartbeat {
  readonly #client: ZkClient;
  readonly #host: HeartbeatHost;
  readonly #timeoutMs: number;
  readonly #everyMs: number;
  readonly #timer: NodeJS.Timeout;
  /** When the heartbeats still waiting for their answers were sent, oldest first. */
  readonly #unanswered: number[] = [];
  /**
   * No later than the leader last heard of the session, give or take the ping lag the margin covers:
   * the send time of the last heartbeat, or of the last connect request (at first, the session's open).
   */
  #touchedAt: number;
  /** When the client last began a connection (wrote a connect request). */
  #connectingAt: number;

  constructor(client: ZkClient, timeoutMs: number, openedAt: number, host: HeartbeatHost) {
    this.#client = client;
    this.#host = host;
    this.#timeoutMs = timeoutMs;
    this.#touchedAt = openedAt;
    this.#connectingAt = openedAt;
    onConnecting(client, () => (this.#connectingAt = performance.now()));
    this.#everyMs = Math.max(Math.floor(timeoutMs / 6), 10);
    this.#timer = setInterval(() => this.#beat(), this.#everyMs);
    this.#timer.unref();
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

  stop(): void {
    clearInterval(this.#timer);
  }

  #beat(): void {
    if (!this.#host.isOpen()) return;
    const oldest = this.#unanswered[0];
    // The client never gives up on a server that stopped answering (a hung member, or a connection
    // the server dropped without closing it). Like ZooKeeper's own Java client, drop a connection
    // that has been silent for a third of the session timeout, so that the client moves to another
    // member while the session can still be saved there.
    if (oldest !== undefined && !this.#host.isSuspended() && performance.now() - oldest > this.#timeoutMs / 3) {
      destroySocket(this.#client);
      return;
    }
    // Sent on schedule even while an earlier one waits for a slow answer (two at most): each one that
    // reaches a follower tells the leader, with the follower's next ping answer, that the session lives.
    if (this.#unanswered.length >= 2) return;
    const sentAt = performance.now();
    // On an ensemble the leader hears that a session on a follower was active only with the follower's
    // next answer to its ping (every half tick): an answer to this heartbeat proves the leader heard of
    // the one before it (or of the reconnect, which the leader itself re-validates), not of this one.
    // Credited no later than one interval after that, so that the lag the margin must cover stays one
    // interval and half a tick even when this one was sent late (a stalled event loop).
    const credit = Math.min(sentAt, this.#touchedAt + this.#everyMs);
    this.#touchedAt = sentAt;
    this.#unanswered.push(sentAt);
    const settled = (): void => {
      const at = this.#unanswered.indexOf(sentAt);
      if (at !== -1) this.#unanswered.splice(at, 1);
    };
    // A sync, not a read: a follower cut off from the leader goes on answering reads (until it notices,
    // syncLimit x tickTime later) while the leader, which expires sessions, hears nothing of ours.
    this.#host.send(reachLeaderStart(this.#client, '/').start).then(
      () => {
        settled();
        this.#host.ack(credit);
      },
      settled,
    );
  }
}

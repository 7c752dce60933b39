import { keepAlivePaceMs } from '../../timing.js';

/**
 * When baton's ZooKeeper heartbeat (a `sync`, answered only through the leader) goes out, and what its
 * answer is credited with. docs/failure-model.md ("The deadline on an ensemble") has the argument.
 *
 * The leader, which expires sessions, hears that a session on a follower is alive only from that
 * follower's answers to its pings (every half tick): an answer to our heartbeat proves the follower
 * was in touch with the leader, not that the leader has heard of this heartbeat yet. A follower cut
 * off right after answering leaves the leader's last word of the session as old as the last ping
 * answer that named it: no older than half a tick (and a round trip) before the cut when every ping
 * interval saw a heartbeat of ours, otherwise no older than the heartbeat before the last. So each
 * answer is credited no later than `creditEveryMs` after the previous heartbeat (or reconnect), and
 * the session's deadline margin must exceed both that interval and half a tick plus a round trip.
 */
export class HeartbeatPace {
  /** Between heartbeats while the session neither holds nor waits: the keep-alive pace of every backend. */
  readonly idleEveryMs: number;
  /** Between heartbeats while it holds or waits, and the most an answer is credited after the previous one: half the margin. */
  creditEveryMs: number;
  #timer: NodeJS.Timeout | undefined;
  readonly #beat: () => void;

  constructor(timeoutMs: number, beat: () => void) {
    this.idleEveryMs = keepAlivePaceMs(timeoutMs, 10);
    this.creditEveryMs = this.idleEveryMs;
    this.#beat = beat;
    this.#start();
  }

  /** The session's deadline margin: heartbeats while busy, and the credit of every answer, follow half of it. */
  setMargin(marginMs: number): void {
    const every = Math.min(Math.max(Math.floor(marginMs / 2), 10), this.idleEveryMs);
    if (every === this.creditEveryMs) return;
    this.creditEveryMs = every;
    this.#start();
  }

  /**
   * Whether a heartbeat is due, the last one (or the last connect) sent at `lastAt`: one busy interval
   * after it while the session holds or waits, one idle interval otherwise. The timer ticks at the busy
   * pace; half a tick of slack keeps an idle heartbeat from slipping by a whole tick.
   */
  due(now: number, lastAt: number, busy: boolean): boolean {
    return now - lastAt >= (busy ? this.creditEveryMs : this.idleEveryMs) - this.creditEveryMs / 2;
  }

  /** What the answer to a heartbeat sent at `sentAt` is credited with, the previous one (or connect) sent at `lastAt`. */
  credit(sentAt: number, lastAt: number): number {
    return Math.min(sentAt, lastAt + this.creditEveryMs);
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #start(): void {
    clearInterval(this.#timer);
    this.#timer = setInterval(this.#beat, this.creditEveryMs);
    this.#timer.unref();
  }
}

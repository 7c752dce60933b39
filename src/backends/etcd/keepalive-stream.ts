import type { IDuplexStream, ILeaseKeepAliveRequest, ILeaseKeepAliveResponse, LeaseClient } from 'etcd3';

import type { Members } from './members.js';

export interface KeepAliveStreamEvents {
  /** The server renewed the lease in answer to a request sent at `sentAt`. */
  ack(sentAt: number): void;
  /** The server says the lease is gone (expired or revoked). */
  gone(): void;
  /** The stream broke or stalled: renewals are not getting through until the next ack. */
  down(): void;
}

type Stream = IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>;

/** One keepalive stream, the member it was dialled to, and its renewal waiting for an answer. */
interface Line {
  readonly stream: Stream;
  readonly member: string | undefined;
  /** When the renewal outstanding on this stream was sent. */
  pending: number | undefined;
  hedge: NodeJS.Timeout | undefined;
}

/** How many recent answer times set the hedge delay. */
const ANSWERS_KEPT = 4;

/** Streams whose renewal went unanswered, still heard (at most this many). */
const HEARD_AFTER_HEDGE = 2;

/**
 * Our own lease keepalive on a gRPC stream, so that every renewal is seen with the time its request
 * was sent (the session's loss deadline counts from it) and a revoked lease is noticed at once.
 *
 * One renewal is outstanding per stream. One not answered within half an interval (or, when answers
 * have lately been slow on every member, within twice the slowest recent one, up to three quarters of
 * an interval) is sent again on a new stream, dialled preferably to another member (the member of the first one is tried last for a
 * while: a member that hangs keeps the connection open and says nothing, so only a timer finds it). The
 * first stream stays open until it answers or breaks, and whichever answers first renews: a cluster
 * that is merely slow, on every member, costs a second stream, not the session. A broken stream is
 * dialled again at once. When no renewal has been answered for a whole interval (or no stream could be
 * opened for that long), the session is told the keepalive is down; its loss deadline keeps running
 * from the last answer.
 */
export class KeepAliveStream {
  readonly #lease: LeaseClient;
  readonly #member: (stream: object) => string | undefined;
  readonly #members: Members;
  readonly #id: string;
  readonly #events: KeepAliveStreamEvents;
  readonly #timer: NodeJS.Timeout;
  readonly #intervalMs: number;
  /** How long an open may take, and the least a renewal waits for its answer before it is sent again. */
  readonly #hedgeMs: number;
  /** How long the last few renewals took to be answered (a ring). */
  readonly #answeredIn: number[] = [];
  #answers = 0;
  /** @internal Streams opened so far (tests). */
  opens = 0;
  #current: Line | undefined;
  /** Replaced after a renewal went unanswered, still listening for that answer, oldest first. */
  #heard: Line[] = [];
  /** Counts opens: the answer to one given up on (or overtaken) is closed on arrival. */
  #opened = 0;
  #opening = false;
  #openTimer: NodeJS.Timeout | undefined;
  /** When the oldest renewal (or open) not answered yet began, and the timer that says down. */
  #unanswered: number | undefined;
  #downTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(
    lease: { lease: LeaseClient; member: (stream: object) => string | undefined },
    members: Members,
    id: string,
    intervalMs: number,
    events: KeepAliveStreamEvents,
  ) {
    this.#lease = lease.lease;
    this.#member = lease.member;
    this.#members = members;
    this.#id = id;
    this.#events = events;
    this.#intervalMs = intervalMs;
    this.#hedgeMs = Math.max(Math.floor(intervalMs / 2), 25);
    this.#timer = setInterval(() => this.#tick(), intervalMs);
    this.#timer.unref();
    this.#open(); // at once: a broken connection shows as a broken stream from the start
  }

  /** @internal The member the current stream was dialled to (tests). */
  get member(): string | undefined {
    return this.#current?.member;
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    clearTimeout(this.#openTimer);
    clearTimeout(this.#downTimer);
    for (const line of [...this.#heard, ...(this.#current === undefined ? [] : [this.#current])]) this.#retire(line);
    this.#heard = [];
    this.#current = undefined;
  }

  #tick(): void {
    if (this.#stopped) return;
    const line = this.#current;
    if (line === undefined) {
      this.#open();
      return;
    }
    if (line.pending !== undefined) return; // its hedge timer is running
    const sentAt = performance.now();
    line.pending = sentAt;
    this.#waitingSince(sentAt);
    line.hedge = setTimeout(() => this.#hedge(line), this.#hedgeAfter());
    line.hedge.unref();
    line.stream.write({ ID: this.#id });
  }

  /**
   * Half an interval; or, on a cluster whose answers have lately been slow everywhere, twice the slowest
   * of the last few, up to three quarters of an interval: sending every renewal twice would not make it
   * answer sooner, and would put every member under suspicion.
   */
  #hedgeAfter(): number {
    const slowest = this.#answeredIn.length === 0 ? 0 : Math.max(...this.#answeredIn);
    return Math.min(Math.max(this.#hedgeMs, 2 * slowest), Math.floor((this.#intervalMs * 3) / 4));
  }

  /** Starts the down timer, unless something earlier is already unanswered. */
  #waitingSince(at: number): void {
    if (this.#unanswered !== undefined) return;
    this.#unanswered = at;
    this.#downTimer = setTimeout(
      () => {
        this.#downTimer = undefined;
        if (!this.#stopped && this.#unanswered !== undefined) this.#events.down();
      },
      Math.max(0, at + this.#intervalMs - performance.now()),
    );
    this.#downTimer.unref();
  }

  #open(): void {
    if (this.#opening || this.#stopped) return;
    this.#opening = true;
    const attempt = (this.#opened += 1);
    this.#waitingSince(performance.now());
    // An open can hang too (etcd3 first fetches an auth token, from the members in a fixed order): after
    // half an interval another may start, and this one's stream is closed if it still comes.
    this.#openTimer = setTimeout(() => {
      if (attempt !== this.#opened) return;
      this.#opened += 1;
      this.#opening = false;
      this.#tick();
    }, this.#hedgeMs);
    this.#openTimer.unref();
    this.opens += 1;
    this.#lease.leaseKeepAlive().then(
      (stream) => {
        const member = this.#member(stream);
        if (attempt !== this.#opened || this.#stopped) {
          this.#retire({ stream, member, pending: undefined, hedge: undefined });
          return;
        }
        this.#opening = false;
        clearTimeout(this.#openTimer);
        const line: Line = { stream, member, pending: undefined, hedge: undefined };
        this.#current = line;
        stream.on('data', (response: ILeaseKeepAliveResponse) => this.#onResponse(line, response));
        // etcd3 dials a stream to one member and does not fail over when it errors later (a dead
        // member refuses at once), so a broken stream is dialled again right away, not at the next tick.
        const broken = (): void => this.#broken(line);
        stream.on('error', broken);
        stream.on('end', broken);
        this.#tick();
      },
      () => {
        if (attempt !== this.#opened) return;
        this.#opening = false;
        clearTimeout(this.#openTimer);
        if (!this.#stopped) setTimeout(() => this.#tick(), 20).unref();
      },
    );
  }

  /** The renewal on `line` went unanswered for half an interval: send one on another stream now. */
  #hedge(line: Line): void {
    line.hedge = undefined;
    if (this.#stopped || line !== this.#current || line.pending === undefined) return;
    this.#suspect(line.member);
    this.#current = undefined;
    this.#heard.push(line);
    if (this.#heard.length > HEARD_AFTER_HEDGE) this.#retire(this.#heard.shift()!);
    this.#open();
  }

  #broken(line: Line): void {
    clearTimeout(line.hedge);
    if (line !== this.#current) {
      this.#heard = this.#heard.filter((heard) => heard !== line);
      return;
    }
    this.#suspect(line.member);
    this.#current = undefined;
    if (this.#stopped) return;
    this.#events.down();
    setTimeout(() => this.#tick(), 20).unref();
  }

  #onResponse(line: Line, response: ILeaseKeepAliveResponse): void {
    const heard = line !== this.#current;
    // Retired (pushed out of the heard ones about 1.5 intervals after its renewal): ignored, even a TTL
    // of 0, which the next renewal on a live stream is told as well; without answers the session's
    // deadline passes anyway.
    if (heard && !this.#heard.includes(line)) return;
    const sentAt = line.pending;
    line.pending = undefined;
    clearTimeout(line.hedge);
    // A stream that was given up on answered after all: its member is slow, not gone; one stream is enough.
    if (heard) {
      this.#heard = this.#heard.filter((other) => other !== line);
      this.#retire(line);
    }
    if (Number(response.TTL) <= 0) {
      this.#events.gone();
      return;
    }
    if (sentAt === undefined) return;
    this.#answeredIn[this.#answers++ % ANSWERS_KEPT] = performance.now() - sentAt;
    this.#unanswered = undefined;
    clearTimeout(this.#downTimer);
    // A renewal still outstanding on the current stream (an answer on a heard one came first) keeps
    // the down timer running from when it was sent.
    const outstanding = this.#current?.pending;
    if (outstanding !== undefined) this.#waitingSince(outstanding);
    this.#events.ack(sentAt);
  }

  /** Tries `member` last for a lease's time: long enough to outlast a pause, short enough to come back. */
  #suspect(member: string | undefined): void {
    if (member !== undefined) this.#members.suspect(member, this.#intervalMs * 4);
  }

  /**
   * Closes a stream for good. Ended first, so that etcd3 does not take the cancel for a failure of the
   * member and close every client of ours on it; cancelled, because a half-close to a member that
   * hangs is never answered and would keep the stream (and the process) alive.
   */
  #retire(line: Line): void {
    clearTimeout(line.hedge);
    line.stream.on('error', () => undefined); // the cancel's own CANCELLED
    line.stream.end();
    line.stream.cancel();
  }
}

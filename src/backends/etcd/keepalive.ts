import type { ILeaseKeepAliveRequest, ILeaseKeepAliveResponse, IDuplexStream, LeaseClient } from 'etcd3';
import type { Members } from './members.js';

export interface KeepAliveEvents {
  /** The server renewed the lease in answer to a request sent at `sentAt`. */
  ack(sentAt: number): void;
  /** The server says the lease is gone (expired or revoked). */
  gone(): void;
  /** The stream broke or stalled: renewals are not getting through until the next ack. */
  down(): void;
}

type Stream = IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse>;

/**
 * Our own lease keepalive on one gRPC stream, so that every renewal is seen with the time its request
 * was sent (the session's loss deadline counts from it) and a revoked lease is noticed at once.
 *
 * One renewal is outstanding at a time. One that is not answered within half an interval is sent
 * again on a new stream, dialled to another member: the member of the old one is tried last for a
 * while (a member that hangs keeps the connection open and says nothing, so only a timer finds it).
 * A broken stream is dialled again at once. When no renewal has been answered for a whole interval,
 * the session is told the keepalive is down; its loss deadline keeps running from the last answer.
 */
export class KeepAlive {
  readonly #lease: LeaseClient;
  readonly #member: () => string | undefined;
  readonly #members: Members;
  readonly #id: string;
  readonly #events: KeepAliveEvents;
  readonly #timer: NodeJS.Timeout;
  readonly #intervalMs: number;
  #stream: Stream | undefined;
  /** The member `#stream` was dialled to, when known. */
  #streamMember: string | undefined;
  #opening = false;
  /** When the renewal outstanding on `#stream` was sent. */
  #pending: number | undefined;
  #hedge: NodeJS.Timeout | undefined;
  /** When the oldest renewal not answered yet (on any stream) was sent, and the timer that says down. */
  #unanswered: number | undefined;
  #downTimer: NodeJS.Timeout | undefined;
  #stopped = false;

  constructor(lease: { lease: LeaseClient; member: () => string | undefined }, members: Members, id: string, intervalMs: number, events: KeepAliveEvents) {
    this.#lease = lease.lease;
    this.#member = lease.member;
    this.#members = members;
    this.#id = id;
    this.#events = events;
    this.#intervalMs = intervalMs;
    this.#timer = setInterval(() => this.#tick(), intervalMs);
    this.#timer.unref();
    this.#open(); // at once: a broken connection shows as a broken stream from the start
  }

  /** @internal The member the current stream was dialled to (tests). */
  get member(): string | undefined {
    return this.#stream === undefined ? undefined : this.#streamMember;
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    clearTimeout(this.#hedge);
    clearTimeout(this.#downTimer);
    this.#stream?.end();
    this.#stream = undefined;
  }

  #tick(): void {
    if (this.#stopped) return;
    if (this.#stream === undefined) {
      this.#open();
      return;
    }
    if (this.#pending !== undefined) return; // its hedge timer is running
    const sentAt = performance.now();
    this.#pending = sentAt;
    if (this.#unanswered === undefined) {
      this.#unanswered = sentAt;
      this.#downTimer = setTimeout(() => this.#down(), this.#intervalMs);
      this.#downTimer.unref();
    }
    const stream = this.#stream;
    this.#hedge = setTimeout(() => {
      if (this.#stream === stream && this.#pending === sentAt) this.#replace(stream);
    }, Math.max(Math.floor(this.#intervalMs / 2), 25));
    this.#hedge.unref();
    stream.write({ ID: this.#id });
  }

  #down(): void {
    this.#downTimer = undefined;
    if (!this.#stopped && this.#unanswered !== undefined) this.#events.down();
  }

  #open(): void {
    if (this.#opening) return;
    this.#opening = true;
    this.#lease.leaseKeepAlive().then(
      (stream) => {
        this.#opening = false;
        if (this.#stopped) {
          stream.end();
          return;
        }
        this.#stream = stream;
        this.#streamMember = this.#member();
        this.#pending = undefined;
        const member = this.#streamMember;
        // A late answer on a stream already replaced would be matched with the new stream's request.
        stream.on('data', (response: ILeaseKeepAliveResponse) => {
          if (this.#stream === stream) this.#onResponse(response, member);
        });
        // etcd3 dials a stream to one member and does not fail over when it errors later (a dead
        // member refuses at once), so a broken stream is dialled again right away, not at the next tick.
        const broken = (): void => {
          if (this.#stream !== stream) return;
          this.#forget(member);
          this.#stream = undefined;
          this.#pending = undefined;
          clearTimeout(this.#hedge);
          if (!this.#stopped) this.#events.down();
          setTimeout(() => this.#tick(), 20).unref();
        };
        stream.on('error', broken);
        stream.on('end', broken);
        this.#tick();
      },
      () => {
        this.#opening = false;
        if (!this.#stopped) setTimeout(() => this.#tick(), 20).unref();
      },
    );
  }

  /** The renewal on `stream` went unanswered: try another member now, without waiting for the tick. */
  #replace(stream: Stream): void {
    this.#forget(this.#streamMember);
    this.#stream = undefined;
    this.#pending = undefined;
    stream.cancel();
    this.#open();
  }

  /** Tries `member` last for a lease's time: long enough to outlast a pause, short enough to come back. */
  #forget(member: string | undefined): void {
    if (member !== undefined) this.#members.suspect(member, this.#intervalMs * 4);
  }

  #onResponse(response: ILeaseKeepAliveResponse, member: string | undefined): void {
    const sentAt = this.#pending;
    this.#pending = undefined;
    clearTimeout(this.#hedge);
    if (member !== undefined) this.#members.trust(member);
    if (Number(response.TTL) <= 0) {
      this.#events.gone();
      return;
    }
    if (sentAt === undefined) return;
    this.#unanswered = undefined;
    clearTimeout(this.#downTimer);
    this.#events.ack(sentAt);
  }
}

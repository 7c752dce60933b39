import type { Etcd3, ILeaseKeepAliveRequest, ILeaseKeepAliveResponse, IDuplexStream } from 'etcd3';

export interface KeepAliveEvents {
  /** The server renewed the lease in answer to a request sent at `sentAt`. */
  ack(sentAt: number): void;
  /** The server says the lease is gone (expired or revoked). */
  gone(): void;
  /** The stream broke or stalled: renewals are not getting through until the next ack. */
  down(): void;
}

/**
 * Our own lease keepalive on one gRPC stream, so that every renewal is seen with the time its request
 * was sent (the session's loss deadline counts from it) and a revoked lease is noticed at once. A
 * broken stream is opened again; while it is down the deadline keeps running.
 */
export class KeepAlive {
  readonly #client: Etcd3;
  readonly #lease: string;
  readonly #events: KeepAliveEvents;
  readonly #timer: NodeJS.Timeout;
  readonly #intervalMs: number;
  #stream: IDuplexStream<ILeaseKeepAliveRequest, ILeaseKeepAliveResponse> | undefined;
  #opening = false;
  #sent: number[] = [];
  #stopped = false;

  constructor(client: Etcd3, lease: string, intervalMs: number, events: KeepAliveEvents) {
    this.#client = client;
    this.#lease = lease;
    this.#events = events;
    this.#intervalMs = intervalMs;
    this.#timer = setInterval(() => this.#tick(), intervalMs);
    this.#timer.unref();
    this.#open(); // at once: a broken connection shows as a broken stream from the start
  }

  stop(): void {
    this.#stopped = true;
    clearInterval(this.#timer);
    this.#stream?.end();
    this.#stream = undefined;
  }

  #tick(): void {
    if (this.#stopped) return;
    if (this.#stream === undefined) {
      this.#open();
      return;
    }
    // One renewal outstanding at a time: a stalled stream must not pile up requests. A stream whose
    // member died can stall without an error; a new one is dialled to a (shuffled) member that answers.
    const outstanding = this.#sent[0];
    if (outstanding !== undefined) {
      if (performance.now() - outstanding > this.#intervalMs) this.#reopen();
      return;
    }
    this.#sent.push(performance.now());
    this.#stream.write({ ID: this.#lease });
  }

  #open(): void {
    if (this.#opening) return;
    this.#opening = true;
    this.#client.leaseClient.leaseKeepAlive().then(
      (stream) => {
        this.#opening = false;
        if (this.#stopped) {
          stream.end();
          return;
        }
        this.#stream = stream;
        this.#sent = [];
        // A late answer on a stream already replaced would be matched with the new stream's request.
        stream.on('data', (response: ILeaseKeepAliveResponse) => {
          if (this.#stream === stream) this.#onResponse(response);
        });
        // etcd3 dials a stream to a random member and does not fail over when it errors later (a dead
        // member refuses at once), so a broken stream is dialled again right away, not at the next tick.
        const broken = (): void => {
          if (this.#stream !== stream) return;
          this.#stream = undefined;
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

  #reopen(): void {
    this.#events.down();
    const stream = this.#stream;
    this.#stream = undefined;
    this.#sent = [];
    stream?.cancel();
    this.#open();
  }

  #onResponse(response: ILeaseKeepAliveResponse): void {
    const sentAt = this.#sent.shift();
    if (Number(response.TTL) <= 0) this.#events.gone();
    else if (sentAt !== undefined) this.#events.ack(sentAt);
  }
}

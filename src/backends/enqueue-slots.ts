import type { GiveUp } from '../../recipes/contract.js';

/**
 * The enqueues one session has sent and not yet seen answered, at most. Each enqueue makes the server
 * read the lock's queue (a ZooKeeper listing, an etcd sorted Range), so thousands sent at once queue
 * up work on the server that the session's heartbeats wait behind: 10,000 at once (64 or more in
 * flight a session) left etcd's keepalives unanswered past the TTL. With 16 the server was kept as
 * busy (queueing 10,000 took as long) and no keepalive went unanswered.
 */
export const ENQUEUES_IN_FLIGHT = 16;

interface Turn {
  start(): void;
}

/**
 * A session's places for enqueues in flight: an enqueue past `ENQUEUES_IN_FLIGHT` waits its turn in
 * the client, first come first served, and a place freed goes at once to the first in line. One not
 * sent yet is given up at once when its caller gives up (`GiveUp`): nothing was written for it.
 * Written here rather than taken from cockatiel's bulkhead or p-queue: both notice an abort only when
 * the waiting call reaches the head of the line, which behind 10,000 enqueues is most of a minute.
 */
export class EnqueueSlots {
  readonly #counters: { enqueuesInFlightMost: number } | undefined;
  /** In line, oldest first (a Set keeps insertion order and forgets a given-up turn at once). */
  readonly #line = new Set<Turn>();
  #inFlight = 0;

  /** `counters`: a probe's, whose high-water mark of enqueues in flight is kept here. */
  constructor(counters?: { enqueuesInFlightMost: number }) {
    this.#counters = counters;
  }

  /** Runs `send` (the whole enqueue, its retries included) once a place is free. */
  run<T>(send: () => Promise<T>, giveUp?: GiveUp): Promise<T> {
    if (this.#inFlight < ENQUEUES_IN_FLIGHT && this.#line.size === 0) return this.#send(send);
    return new Promise<T>((resolve, reject) => {
      const deadline = giveUp?.();
      let started = false;
      const onGiveUp = (): void => {
        if (started) return;
        this.#line.delete(turn);
        deadline?.dispose();
        reject(deadline!.signal.reason);
      };
      const turn: Turn = {
        start: () => {
          // Sent from here on: a give-up now must not reject a call whose entry may be written.
          started = true;
          deadline?.signal.removeEventListener('abort', onGiveUp);
          deadline?.dispose();
          this.#send(send).then(resolve, reject);
        },
      };
      if (deadline?.signal.aborted === true) return onGiveUp();
      deadline?.signal.addEventListener('abort', onGiveUp, { once: true });
      this.#line.add(turn);
    });
  }

  async #send<T>(send: () => Promise<T>): Promise<T> {
    this.#inFlight += 1;
    const counters = this.#counters;
    if (counters !== undefined && this.#inFlight > counters.enqueuesInFlightMost)
      counters.enqueuesInFlightMost = this.#inFlight;
    try {
      return await send();
    } finally {
      this.#inFlight -= 1;
      const next = this.#line.values().next();
      if (next.done !== true) {
        this.#line.delete(next.value);
        next.value.start();
      }
    }
  }
}

/** A request's outcome, as callback-style clients report it: an error, or a falsy error and the value. */
export type Done<T> = (error: unknown, value?: T) => void;
/**
 * A request in callback form, sent when called with the function that takes its outcome. The
 * ZooKeeper driver's hot requests take this form: one promise per request (its own), not one more
 * inside it.
 */
export type Start<T> = (done: Done<T>) => void;

/** The request as a promise. */
export function started<T>(start: Start<T>): Promise<T> {
  return new Promise<T>((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value as T))));
}

/** A request made of promises (several requests, or a client's promise API) in callback form. */
export function fromPromise<T>(request: () => Promise<T>): Start<T> {
  return (done) => {
    request().then(
      (value) => done(null, value),
      (error: unknown) => done(error || new Error(`request failed: ${String(error)}`)),
    );
  };
}

/** What a failed request settles with instead of its error: a retry's promise, or a throw (a mapped error). */
export type Recover<T> = (error: unknown) => T | PromiseLike<T>;

/**
 * The requests a driver has in flight. Clients keep requests queued while disconnected, and not every
 * client fails them when it is closed; `end()` settles every one of them with the session's end, so
 * that no caller waits on a dead session. The rejecters are kept in numbered slots, each reused once
 * its request has settled: requests are the hot path, and a Set that every request joins and leaves
 * hashes its entry twice and rebuilds its table every few requests.
 */
export class InFlight {
  readonly #slots: (((reason: unknown) => void) | undefined)[] = [];
  readonly #free: number[] = [];
  #ended: { reason: unknown } | undefined;
  readonly #onFailure: ((error: unknown) => void) | undefined;

  /** `onFailure` sees every failed request's error before its caller does (a driver learns of its session's end from it). */
  constructor(onFailure?: (error: unknown) => void) {
    this.#onFailure = onFailure;
  }

  get ended(): boolean {
    return this.#ended !== undefined;
  }

  /** How many requests are in flight. */
  get size(): number {
    return this.#slots.length - this.#free.length;
  }

  /**
   * A request in callback form: the returned promise is the only one made for it. A failure goes to
   * `recover`, if given, whose answer (or throw) settles the promise instead: a retry, or a mapped
   * error, without a `.then` of its own that every successful request would pass through.
   */
  call<T>(start: Start<T>, recover?: Recover<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // Every failure goes the same way: the request's own, one before it was sent, and the session's end.
      const fail =
        recover === undefined
          ? reject
          : (error: unknown): void => {
              try {
                resolve(recover(error));
              } catch (failure) {
                reject(failure);
              }
            };
      if (this.#ended !== undefined) return fail(this.#ended.reason);
      const slot = this.#free.pop() ?? this.#slots.length;
      this.#slots[slot] = fail;
      try {
        start((error, value) => {
          // Settled already if the session ended first; the hook still hears of a late failure.
          const pending = this.#release(slot, fail);
          if (!error) return pending ? resolve(value as T) : undefined;
          try {
            this.#onFailure?.(error);
          } finally {
            // Whatever the hook did, the request settles.
            if (pending) fail(error);
          }
        });
      } catch (error) {
        // A request refused before it was sent (the client validates paths as it is called).
        if (this.#release(slot, fail)) fail(error);
      }
    });
  }

  /** Frees the slot, if it still holds this request (not once `end()` has settled it); whether it did. */
  #release(slot: number, fail: (reason: unknown) => void): boolean {
    if (this.#slots[slot] !== fail) return false;
    this.#slots[slot] = undefined;
    this.#free.push(slot);
    return true;
  }

  end(reason: unknown): void {
    if (this.#ended !== undefined) return;
    this.#ended = { reason };
    const rejects = this.#slots.splice(0);
    this.#free.length = 0;
    for (const reject of rejects) reject?.(reason);
  }
}

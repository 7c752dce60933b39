/** One lock the session has entries in: its liveness key there, the entries, and when the key was last set. */
interface LockLiveness {
  readonly key: string;
  readonly ids: Set<string>;
  /** The send time of the latest answered request that set the key to expire a full timeout later. */
  setAt: number;
}

/**
 * The keys that keep a Redis session alive: its own key, and its key in each lock where it has
 * entries (the scripts judge an entry by the latter, which shares the lock's cluster slot). The
 * keep-alive renews them all, and acknowledges the session at the oldest of their last settings, so
 * that no key can expire while the session believes itself alive. A session's acknowledgement never
 * goes back, so a lock entered with a setting older than the acknowledgement given (an enqueue
 * answered late, while renewals of the other keys went on) must be renewed before it counts (see the
 * driver's enqueue). A lock's key is renewed from the answer of the enqueue that set it (renewing it
 * before could find it missing) until the release of the session's last entry there is answered;
 * then it is left to expire (deleting it could race a renewal already sent, or the next enqueue), and
 * only a close deletes it.
 */
export class LivenessKeys {
  readonly #sessionKey: string;
  readonly #locks = new Map<string, LockLiveness>();
  /** The keys of locks left, each with when it was left: they may live a timeout longer. */
  readonly #left = new Map<string, number>();
  readonly #timeoutMs: number;
  /** The send time of the latest answered renewal of the session's own key. */
  #sessionSetAt: number;
  /** The latest acknowledgement given to the session. */
  #given: number;

  constructor(sessionKey: string, openedAt: number, timeoutMs: number) {
    this.#sessionKey = sessionKey;
    this.#timeoutMs = timeoutMs;
    this.#sessionSetAt = openedAt;
    this.#given = openedAt;
  }

  /** Whether the session has entries in `queue` whose enqueue was answered (its key there must exist). */
  has(queue: string): boolean {
    return this.#locks.has(queue);
  }

  /** An enqueue sent at `sentAt` was answered: its entry lives under the session's key in the lock. */
  entered(queue: string, key: string, id: string, sentAt: number): void {
    const lock = this.#locks.get(queue);
    if (lock === undefined) this.#locks.set(queue, { key, ids: new Set([id]), setAt: sentAt });
    else {
      lock.ids.add(id);
      lock.setAt = Math.max(lock.setAt, sentAt);
    }
  }

  /** The entry's release was answered: the lock's key is no longer renewed once its last entry went. */
  left(queue: string, id: string): void {
    const lock = this.#locks.get(queue);
    if (lock === undefined || !lock.ids.delete(id) || lock.ids.size > 0) return;
    this.#locks.delete(queue);
    const now = performance.now();
    this.#left.set(lock.key, now);
    for (const [key, at] of this.#left) if (now - at > this.#timeoutMs) this.#left.delete(key);
  }

  /** Every key to renew now: the session's own first, then each lock's, with the queue it stands for. */
  keys(): { key: string; queue?: string }[] {
    return [{ key: this.#sessionKey }, ...[...this.#locks].map(([queue, lock]) => ({ key: lock.key, queue }))];
  }

  /** A renewal sent at `sentAt` was answered for all of `renewed`. */
  renewed(renewed: readonly { key: string; queue?: string }[], sentAt: number): void {
    for (const { key, queue } of renewed) {
      if (queue === undefined) this.#sessionSetAt = Math.max(this.#sessionSetAt, sentAt);
      else {
        const lock = this.#locks.get(queue);
        if (lock?.key === key) lock.setAt = Math.max(lock.setAt, sentAt);
      }
    }
  }

  /** The time every key is known to live a full timeout from: the session's acknowledgement, noted as given. */
  acknowledge(): number {
    let oldest = this.#sessionSetAt;
    for (const lock of this.#locks.values()) oldest = Math.min(oldest, lock.setAt);
    this.#given = Math.max(this.#given, oldest);
    return oldest;
  }

  /** The latest acknowledgement given: the session's deadline counts from it. */
  get given(): number {
    return this.#given;
  }

  /** The keys in locks, those left a moment ago too (for a close that deletes them all). */
  lockKeys(): string[] {
    return [...new Set([...[...this.#locks.values()].map((lock) => lock.key), ...this.#left.keys()])];
  }
}

/** How many of the latest releases, from how long before a disconnect, are sent again after it. */
const RELEASES_KEPT = 256;
const RELEASES_KEPT_MS = 5_000;

/**
 * A session's latest answered releases, to send again after the server may have forgotten them: a
 * primary that died may not have passed them on to the replica promoted in its place (replication is
 * asynchronous). Sent again there, each deletes its entry if it came back (ids are never reused, so
 * nothing newer is touched), instead of leaving it at the head of its queue until the session ends.
 * `T` is what the driver needs to send one release again.
 */
export class RecentReleases<T> {
  readonly #released: { release: T; at: number }[] = [];
  /** The releases answered shortly before the connection closed, to send again once it is back. */
  #doubtful: T[] | undefined;

  /** A release was answered now. */
  note(release: T): void {
    const now = performance.now();
    this.#released.push({ release, at: now });
    while (
      this.#released.length > RELEASES_KEPT ||
      (this.#released.length > 0 && now - this.#released[0]!.at > RELEASES_KEPT_MS)
    )
      this.#released.shift();
  }

  /** The releases answered in the last seconds. */
  recent(): T[] {
    const since = performance.now() - RELEASES_KEPT_MS;
    return this.#released.filter(({ at }) => at >= since).map(({ release }) => release);
  }

  /** The connection closed: the releases answered just before are in doubt until it is back (the first close counts). */
  connectionClosed(): void {
    this.#doubtful ??= this.recent();
  }

  /** The connection is back: the releases to send again, those in doubt since it closed (none twice). */
  connectionBack(): T[] {
    const doubtful = this.#doubtful ?? [];
    this.#doubtful = undefined;
    return doubtful;
  }
}

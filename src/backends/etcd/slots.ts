/**
 * Per-queue slot numbers of one session's entries. A slot stays taken until the server has confirmed
 * the entry's delete, so a slot is reused only once its key is free again.
 */
export class Slots {
  readonly #taken = new Map<string, Set<number>>();

  take(queue: string): number {
    let taken = this.#taken.get(queue);
    if (taken === undefined) this.#taken.set(queue, (taken = new Set()));
    let slot = 0;
    while (taken.has(slot)) slot += 1;
    taken.add(slot);
    return slot;
  }

  free(queue: string, slot: number): void {
    const taken = this.#taken.get(queue);
    if (taken === undefined) return;
    taken.delete(slot);
    if (taken.size === 0) this.#taken.delete(queue);
  }
}

import type { Kind } from './lock-model.js';

/**
 * What must hold of the real grants whatever the model says, checked as each grant arrives: no two
 * holders of one lock at once unless both read, and fencing tokens that order holders as their places
 * in the queue do. A holder counts from the grant's arrival until the test starts giving it up (a
 * release, an expiry, a close): the server may hand the lock on before the releasing call returns.
 */
export class GrantChecks {
  readonly #holders = new Map<string, Map<number, { kind: Kind; token: bigint }>>();
  /** Every grant of each lock so far: its place in the model's queue and its token. */
  readonly #grants = new Map<string, { place: number; token: bigint; what: string }[]>();
  readonly #violations: string[] = [];

  granted(lock: string, id: number, kind: Kind, place: number, token: bigint, what: string): void {
    const holders = this.#holders.get(lock) ?? new Map<number, { kind: Kind; token: bigint }>();
    this.#holders.set(lock, holders);
    for (const [other, holder] of holders) {
      if (kind !== 'read' || holder.kind !== 'read') {
        this.#violations.push(
          `${what} granted while entry ${other} (${holder.kind}, token ${holder.token}) holds lock "${lock}"`,
        );
      }
    }
    holders.set(id, { kind, token });
    const grants = this.#grants.get(lock) ?? [];
    this.#grants.set(lock, grants);
    for (const earlier of grants) {
      const inOrder =
        earlier.place < place ? earlier.token < token : earlier.place > place ? earlier.token > token : true;
      if (!inOrder) {
        this.#violations.push(
          `${what} has fencing token ${token} at place ${place}, ${earlier.what} had ${earlier.token} at place ${earlier.place}`,
        );
      }
    }
    grants.push({ place, token, what });
  }

  /** The holder is being given up: from now on another may be granted. */
  givingUp(lock: string, id: number): void {
    this.#holders.get(lock)?.delete(id);
  }

  /** A downgrade: from now on the holder shares with readers. */
  downgrading(lock: string, id: number): void {
    const holder = this.#holders.get(lock)?.get(id);
    if (holder !== undefined) holder.kind = 'read';
  }

  /** Throws the violations seen so far, all of them. */
  throwIfViolated(): void {
    if (this.#violations.length > 0) throw new Error(`violations:\n  ${this.#violations.join('\n  ')}`);
  }
}

import fc from 'fast-check';

import { type Kind, KINDS, type LockModel, type ModelEntry } from './lock-model.js';
import type { RealLocks } from './real-locks.js';

/**
 * The steps a model run is made of. Each applies a step to the model first (the server may act on it
 * before the real call returns: a release hands the lock on before the releaser hears back), then to
 * the real locks, then waits until the real grants are the model's (`settle`).
 *
 * A step that picks among entries (release, abort, downgrade) carries a number taken modulo the
 * entries it can pick from, so that a shrunk sequence of steps still picks one.
 */
export type LockCommand = fc.AsyncCommand<LockModel, RealLocks>;

/** How many steps of each kind ran (and how many acquisitions the model granted), for BATON_MODEL_STATS. */
export const tally = new Map<string, number>();
function count(what: string): void {
  tally.set(what, (tally.get(what) ?? 0) + 1);
}

/** acquire(): queued at the tail; granted now or later, by the steps after it. */
class Acquire implements LockCommand {
  constructor(
    readonly slot: number,
    readonly lock: string,
    readonly kind: Kind,
  ) {}

  check(): boolean {
    return true;
  }

  async run(model: LockModel, real: RealLocks): Promise<void> {
    count('acquire');
    real.startAcquire(model.enqueue(this.lock, this.slot, this.kind));
    await real.settle(model);
  }

  toString(): string {
    return `acquire(slot ${this.slot}, ${this.lock}, ${this.kind})`;
  }
}

/**
 * acquire({ timeoutMs }) while others queue behind it: granted if nothing blocks it now, otherwise
 * it times out (nothing can unblock it meanwhile) and withdraws, and whoever queued behind it may be
 * granted then (a reader behind a writer that gave up joins the readers ahead).
 */
class TimedAcquire implements LockCommand {
  constructor(
    readonly slot: number,
    readonly lock: string,
    readonly kind: Kind,
    readonly timeoutMs: number,
    readonly behind: readonly { slot: number; kind: Kind }[],
  ) {}

  check(): boolean {
    return true;
  }

  async run(model: LockModel, real: RealLocks): Promise<void> {
    count('timedAcquire');
    const timed = model.enqueue(this.lock, this.slot, this.kind);
    real.startAcquire(timed, this.timeoutMs);
    // Each one queued before the next starts: calls from two sessions reach the server in any order.
    await real.awaitQueued(model, this.lock, timed);
    for (const { slot, kind } of this.behind) {
      real.startAcquire(model.enqueue(this.lock, slot, kind));
      await real.awaitQueued(model, this.lock, timed);
    }
    if (!timed.granted) {
      await real.timedOut(timed);
      model.remove(timed.id);
    }
    await real.settle(model);
  }

  toString(): string {
    const behind = this.behind.map(({ slot, kind }) => `${kind} by slot ${slot}`).join(', ');
    return `timedAcquire(slot ${this.slot}, ${this.lock}, ${this.kind}, ${this.timeoutMs} ms${behind === '' ? '' : `, then ${behind}`})`;
  }
}

/** tryAcquire(): the lock if nothing blocks it now, null otherwise (and nothing left queued). */
class TryAcquire implements LockCommand {
  constructor(
    readonly slot: number,
    readonly lock: string,
    readonly kind: Kind,
  ) {}

  check(): boolean {
    return true;
  }

  async run(model: LockModel, real: RealLocks): Promise<void> {
    count('tryAcquire');
    const expected = model.grantableAtTail(this.lock, this.kind);
    const entry = model.enqueue(this.lock, this.slot, this.kind);
    if (!expected) model.remove(entry.id);
    const handle = await real.tryAcquire(entry);
    if ((handle !== null) !== expected)
      throw new Error(
        `${this}: expected ${expected ? 'the lock' : 'null'}, got ${handle === null ? 'null' : 'the lock'}`,
      );
    await real.settle(model);
  }

  toString(): string {
    return `tryAcquire(slot ${this.slot}, ${this.lock}, ${this.kind})`;
  }
}

/** Picks the `pick`-th (modulo) of the entries a step can act on. */
function picked(entries: readonly ModelEntry[], pick: number): ModelEntry {
  return entries[pick % entries.length]!;
}

class Release implements LockCommand {
  constructor(readonly pick: number) {}

  check(model: LockModel): boolean {
    return model.granted().length > 0;
  }

  async run(model: LockModel, real: RealLocks): Promise<void> {
    count('release');
    const entry = picked(model.granted(), this.pick);
    model.remove(entry.id);
    await real.release(entry);
    await real.settle(model);
  }

  toString(): string {
    return `release(held #${this.pick})`;
  }
}

/** An AbortSignal given to a waiting acquire fires: it rejects with the reason and withdraws. */
class Abort implements LockCommand {
  constructor(readonly pick: number) {}

  check(model: LockModel): boolean {
    return model.waiting().length > 0;
  }

  async run(model: LockModel, real: RealLocks): Promise<void> {
    count('abort');
    const entry = picked(model.waiting(), this.pick);
    model.remove(entry.id);
    await real.abort(entry);
    await real.settle(model);
  }

  toString(): string {
    return `abort(waiting #${this.pick})`;
  }
}

/** ReadWriteLock.downgrade() of a held write: a read at its place, and the reads behind it join. */
class Downgrade implements LockCommand {
  constructor(readonly pick: number) {}

  check(model: LockModel): boolean {
    return heldWrites(model).length > 0;
  }

  async run(model: LockModel, real: RealLocks): Promise<void> {
    count('downgrade');
    const write = picked(heldWrites(model), this.pick);
    const read = model.downgrade(write.id);
    await real.downgrade(write, read);
    await real.settle(model);
  }

  toString(): string {
    return `downgrade(held write #${this.pick})`;
  }
}

function heldWrites(model: LockModel): ModelEntry[] {
  return model.granted().filter((entry) => entry.kind === 'write');
}

/** The session of a slot ends, by expiry on the server or by close(); a new one takes the slot. */
class EndSession implements LockCommand {
  constructor(
    readonly slot: number,
    readonly how: 'expired' | 'closed',
  ) {}

  check(): boolean {
    return true;
  }

  async run(model: LockModel, real: RealLocks): Promise<void> {
    count(this.how === 'expired' ? 'expire' : 'close');
    const gone = model.endSession(this.slot);
    await real.endSession(this.slot, this.how, gone);
    await real.settle(model);
  }

  toString(): string {
    return `${this.how === 'expired' ? 'expire' : 'close'}(slot ${this.slot})`;
  }
}

/**
 * Gives back everything at the end of a run, from the tail of each queue, which unblocks nobody:
 * a waiter is aborted, a holder releases.
 */
export async function drain(model: LockModel, real: RealLocks): Promise<void> {
  for (;;) {
    const last = model.locks.map((lock) => model.queue(lock).at(-1)).find((entry) => entry !== undefined);
    if (last === undefined) return;
    model.remove(last.id);
    if (last.granted) await real.release(last);
    else await real.abort(last);
    await real.settle(model);
  }
}

export interface CommandShape {
  /** Session slots, and lock names the steps use. */
  readonly slots: number;
  readonly locks: readonly string[];
  /** The timeouts timed acquires use, in ms. */
  readonly timeoutsMs: readonly number[];
  /**
   * How often a session ends (expiry or close): once in about `endEvery` steps. Each end costs the time
   * its client needs to learn of it, a keepalive interval on etcd.
   */
  readonly endEvery: number;
}

/** The arbitraries of every step, weighted towards queueing and releasing. */
export function lockCommands(shape: CommandShape): fc.Arbitrary<LockCommand>[] {
  const slot = fc.nat({ max: shape.slots - 1 });
  const lock = fc.constantFrom(...shape.locks);
  const kind = fc.constantFrom(...KINDS);
  const pick = fc.nat({ max: 7 });
  const often = <T>(arbitrary: fc.Arbitrary<T>, weight: number): fc.WeightedArbitrary<T> => ({ arbitrary, weight });
  const steps = [
    often(
      fc.tuple(slot, lock, kind).map(([s, l, k]): LockCommand => new Acquire(s, l, k)),
      4,
    ),
    often(
      fc
        .tuple(
          slot,
          lock,
          kind,
          fc.constantFrom(...shape.timeoutsMs),
          fc.array(fc.record({ slot, kind }), { maxLength: 2 }),
        )
        .map(([s, l, k, t, behind]): LockCommand => new TimedAcquire(s, l, k, t, behind)),
      1,
    ),
    often(
      fc.tuple(slot, lock, kind).map(([s, l, k]): LockCommand => new TryAcquire(s, l, k)),
      1,
    ),
    often(
      pick.map((p): LockCommand => new Release(p)),
      4,
    ),
    often(
      pick.map((p): LockCommand => new Abort(p)),
      1,
    ),
    often(
      pick.map((p): LockCommand => new Downgrade(p)),
      2,
    ),
  ];
  const others = steps.reduce((sum, step) => sum + step.weight, 0);
  const end = fc
    .tuple(slot, fc.constantFrom('expired' as const, 'expired' as const, 'closed' as const))
    .map(([s, how]): LockCommand => new EndSession(s, how));
  // Weighted so that one step in `endEvery` ends a session. One arbitrary for fc.commands, which
  // would pick evenly among several.
  const scaled = steps.map(({ arbitrary, weight }) => often(arbitrary, weight * (shape.endEvery - 1)));
  return [fc.oneof(...scaled, often(end, others))];
}

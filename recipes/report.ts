import type { Entry, SessionCore } from './contract.js';
import { LockLostError, LockTimeoutError } from './errors.js';
import type { LockKind } from './events.js';

/**
 * The stories the session's `'lock'` listeners are told (see events.ts). Each story is decided once,
 * when it begins: `reportWait` and `reportHold` return undefined when nobody listens, and the recipes
 * call the result with `?.`, so an unheard lock builds no event and reads no clock beyond its own.
 */

/**
 * When each reported grant happened, for the handle made from that entry to time its hold. Keyed by
 * the entry object so that the waiting loop and the handles (of every recipe) need not pass it along.
 */
const grants = new WeakMap<Entry, { readonly at: number; readonly kind: LockKind }>();

/** The `holdWarningMs` of granted entries whose handle is not made yet. */
const warnings = new WeakMap<Entry, number>();

/** Marks a granted entry for a warning after `ms` of holding (the handle made from it sets the timer). */
export function warnHoldAfter(entry: Entry, ms: number): void {
  warnings.set(entry, ms);
}

/** The warning threshold a granted entry was marked with, if any (once: the handle takes it). */
export function takeHoldWarning(entry: Entry): number | undefined {
  const ms = warnings.get(entry);
  if (ms !== undefined) warnings.delete(entry);
  return ms;
}

/** One wait being told: `requested` at once, then exactly one outcome. */
export class ReportedWait {
  #ended = false;

  constructor(
    private readonly session: SessionCore,
    private readonly name: string,
    private readonly kind: LockKind,
    private readonly startedAt: number,
  ) {
    session.report({ type: 'requested', name, kind });
  }

  granted(entry: Entry): void {
    if (!this.#end()) return;
    const now = performance.now();
    grants.set(entry, { at: now, kind: this.kind });
    this.session.report({
      type: 'granted',
      name: this.name,
      kind: this.kind,
      waitMs: now - this.startedAt,
      fencingToken: entry.fencingToken,
    });
  }

  busy(): void {
    if (!this.#end()) return;
    this.session.report({ type: 'busy', name: this.name, kind: this.kind, waitMs: performance.now() - this.startedAt });
  }

  /** The wait gave up with `error`: the caller's own abort, a timeout, or anything else. */
  gaveUp(error: unknown, signal: AbortSignal | undefined): void {
    if (!this.#end()) return;
    const about = { name: this.name, kind: this.kind, waitMs: performance.now() - this.startedAt };
    // By identity, not class: a caller's signal may abort with any reason, a LockTimeoutError included.
    if (signal?.aborted === true && error === signal.reason)
      this.session.report({ type: 'aborted', ...about, reason: error });
    else if (error instanceof LockTimeoutError) this.session.report({ type: 'timedOut', ...about });
    else this.session.report({ type: 'failed', ...about, error });
  }

  /** True the first time: a story has one ending. */
  #end(): boolean {
    if (this.#ended) return false;
    this.#ended = true;
    return true;
  }
}

/** The report of a wait, or undefined when nobody listens. `startedAt`: a clock reading the caller has. */
export function reportWait(
  session: SessionCore,
  name: string,
  kind: LockKind,
  startedAt?: number,
): ReportedWait | undefined {
  if (!session.reporting) return undefined;
  return new ReportedWait(session, name, kind, startedAt ?? performance.now());
}

/** One hold being told: exactly one of `released` and `lost`. */
export class ReportedHold {
  #ended = false;

  constructor(
    private readonly session: SessionCore,
    private readonly entry: Entry,
    private readonly kind: LockKind,
    private readonly grantedAt: number,
  ) {}

  released(): void {
    if (!this.#end()) return;
    this.session.report({ type: 'released', ...this.#about() });
  }

  lost(reason: Error): void {
    if (!this.#end()) return;
    const revoked = reason instanceof LockLostError && reason.reason === 'revoked';
    this.session.report({ type: 'lost', ...this.#about(), reason, revoked });
  }

  /** The hold passed its warning threshold: told only while it has not ended. */
  heldTooLong(): void {
    if (this.#ended) return;
    this.session.report({ type: 'heldTooLong', ...this.#about() });
  }

  #about(): { name: string; kind: LockKind; holdMs: number; fencingToken: bigint } {
    return {
      name: this.entry.queue,
      kind: this.kind,
      holdMs: performance.now() - this.grantedAt,
      fencingToken: this.entry.fencingToken,
    };
  }

  /** True the first time: a hold ends once. */
  #end(): boolean {
    if (this.#ended) return false;
    this.#ended = true;
    return true;
  }
}

/**
 * The report of the hold of a granted entry, or undefined when nobody listens or its grant was not
 * told (then its end is not told either).
 */
export function reportHold(session: SessionCore, entry: Entry): ReportedHold | undefined {
  if (!session.reporting) return undefined;
  const grant = grants.get(entry);
  if (grant === undefined) return undefined;
  grants.delete(entry);
  return new ReportedHold(session, entry, grant.kind, grant.at);
}

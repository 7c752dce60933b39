import { channel, tracingChannel } from 'node:diagnostics_channel';

import type { Entry, Session } from './contract.js';
import { LockTimeoutError } from './errors.js';
import type { LockKind } from './events.js';

/**
 * The `node:diagnostics_channel` face of the waiting loop, the hook APM agents use (as undici and pg
 * publish theirs). Each wait runs inside a `tracingChannel` (`baton-locks:acquire`, `:campaign`,
 * `:permits`), whose `start` is published synchronously in the caller's async context; each hold is
 * told on plain channels. Nothing is built and no clock is read while nobody subscribes.
 */

/** The operation a wait belongs to: the name of its tracing channel after `baton-locks:`. */
export type WaitOperation = 'acquire' | 'campaign' | 'permits';

/** How a wait ended (the lock events' names: see events.ts). */
export type WaitOutcome = 'granted' | 'busy' | 'timedOut' | 'aborted' | 'failed';

/**
 * The context object of a wait's tracing channel: the same object at `start`, `end`, `asyncStart`,
 * `asyncEnd` and `error`. The fields below `try` are filled in as the wait goes on; `result` (the
 * granted entry, or null from a busy tryAcquire) and `error` are set by the tracing channel itself.
 */
export interface WaitMessage {
  readonly operation: WaitOperation;
  /** The lock name, as validated. */
  readonly name: string;
  readonly kind: LockKind;
  /** The recipe, when its kind does not tell it (`multilock` for a MultiLock's locks). */
  readonly recipe: string | undefined;
  /** The session the wait runs on. */
  readonly session: Session;
  /** A tryAcquire: never waits. */
  readonly try: boolean;
  /** The wait's timeout, if it has one. */
  readonly timeoutMs: number | undefined;
  /** Entries ahead of ours in the listing that came with our enqueue (0: at the head). */
  position?: number;
  outcome?: WaitOutcome;
  /** Milliseconds from the call to the outcome. */
  waitMs?: number;
  /** The granted entry's fencing token. */
  fencingToken?: bigint;
  result?: unknown;
  error?: unknown;
}

/**
 * What the hold channels carry: one object per grant, the same at `granted` and at its end
 * (`released` or `lost`) and any `heldTooLong` in between, so that a subscriber can keep its state on it.
 */
export interface HoldMessage {
  /** The wait that led to the grant. */
  readonly wait: WaitMessage;
  readonly fencingToken: bigint;
  /** Milliseconds since the grant, at `released`, `lost` and `heldTooLong`. */
  holdMs?: number;
  /** The `LockLostError`, at `lost`. */
  reason?: Error;
}

/** The channels, by name; `baton-locks:acquire` is the tracing channel `tracing:baton-locks:acquire:start` etc. */
export const CHANNELS = {
  acquire: tracingChannel<unknown, WaitMessage>('baton-locks:acquire'),
  campaign: tracingChannel<unknown, WaitMessage>('baton-locks:campaign'),
  permits: tracingChannel<unknown, WaitMessage>('baton-locks:permits'),
  granted: channel('baton-locks:hold:granted'),
  released: channel('baton-locks:hold:released'),
  lost: channel('baton-locks:hold:lost'),
  heldTooLong: channel('baton-locks:hold:heldTooLong'),
} as const;

const HOLD_CHANNELS = [CHANNELS.granted, CHANNELS.released, CHANNELS.lost, CHANNELS.heldTooLong] as const;

function holdsHeard(): boolean {
  return HOLD_CHANNELS.some((c) => c.hasSubscribers);
}

function operationOf(kind: LockKind): WaitOperation {
  return kind === 'candidate' ? 'campaign' : kind === 'semaphore' ? 'permits' : 'acquire';
}

/** The grant's hold message, for the handle made from that entry (as report.ts keeps its grants). */
const holds = new WeakMap<Entry, HoldMessage>();
/** How many grants in `holds` await their handle: while none, a handle looks nothing up. */
let pendingHolds = 0;

/** One wait being traced: fills the message the tracing channel publishes. */
export class TracedWait {
  readonly #startedAt = performance.now();

  constructor(readonly message: WaitMessage) {}

  /** Runs the wait inside the tracing channel: `start` now, in the caller's context; `asyncEnd` when it settles. */
  run<T>(wait: () => Promise<T>): Promise<T> {
    return CHANNELS[this.message.operation].tracePromise(wait, this.message);
  }

  enqueued(queue: readonly Entry[], self: Entry): void {
    const at = queue.findIndex((entry) => entry.key === self.key);
    if (at >= 0) this.enqueuedAt(at);
  }

  /** The entries ahead of ours when it was added. */
  enqueuedAt(position: number): void {
    // The first place only: a requeue after our entry vanished does not change where the wait began.
    this.message.position ??= position;
  }

  granted(entry: Entry): void {
    this.#end('granted');
    this.message.fencingToken = entry.fencingToken;
    if (holdsHeard()) {
      const hold: HoldMessage = { wait: this.message, fencingToken: entry.fencingToken };
      holds.set(entry, hold);
      pendingHolds += 1;
      CHANNELS.granted.publish(hold);
    }
  }

  busy(): void {
    this.#end('busy');
  }

  /** As report.ts tells a give-up: the caller's own abort by identity, a timeout, or anything else. */
  gaveUp(error: unknown, signal: AbortSignal | undefined): void {
    if (signal?.aborted === true && error === signal.reason) this.#end('aborted');
    else if (error instanceof LockTimeoutError) this.#end('timedOut');
    else this.#end('failed');
  }

  #end(outcome: WaitOutcome): void {
    if (this.message.outcome !== undefined) return;
    this.message.outcome = outcome;
    this.message.waitMs = performance.now() - this.#startedAt;
  }
}

/** The trace of a wait, or undefined when nobody subscribes to its channel (nothing is built then). */
export function traceWait(
  request: { readonly session: Session; readonly queue: string; readonly kind: LockKind; readonly recipe?: string },
  tryOnly: boolean,
  timeoutMs?: number,
): TracedWait | undefined {
  const { session, queue: name, kind, recipe } = request;
  const operation = operationOf(kind);
  // A subscriber of the hold channels alone hears of holds too: their messages come from the wait's.
  if (!CHANNELS[operation].hasSubscribers && !holdsHeard()) return undefined;
  return new TracedWait({ operation, name, kind, recipe, session, try: tryOnly, timeoutMs });
}

/** One traced hold: its end is told once. */
export class TracedHold {
  readonly #grantedAt = performance.now();
  #ended = false;

  constructor(readonly message: HoldMessage) {}

  released(): void {
    this.#end(CHANNELS.released);
  }

  lost(reason: Error): void {
    this.message.reason = reason;
    this.#end(CHANNELS.lost);
  }

  /** The hold passed its warning threshold (told whether or not it ends later). */
  heldTooLong(): void {
    if (this.#ended) return;
    this.message.holdMs = performance.now() - this.#grantedAt;
    CHANNELS.heldTooLong.publish(this.message);
  }

  #end(to: (typeof HOLD_CHANNELS)[number]): void {
    if (this.#ended) return;
    this.#ended = true;
    this.message.holdMs = performance.now() - this.#grantedAt;
    to.publish(this.message);
  }
}

/** The trace of the hold of a granted entry, or undefined when its grant was not told. */
export function traceHold(entry: Entry): TracedHold | undefined {
  if (pendingHolds === 0) return undefined;
  const hold = holds.get(entry);
  if (hold === undefined) return undefined;
  holds.delete(entry);
  pendingHolds -= 1;
  return new TracedHold(hold);
}

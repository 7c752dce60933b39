/**
 * The enqueue of the waiting loop (queue.ts) and what its answer says: the first decision, whether the
 * waits may read short, and the trace's position. The answer is the whole queue, or, where the backend
 * can (`enqueueAhead`), a window of the entries just ahead with the movers the queue holds.
 */
import type { Enqueued, EnqueuedAhead, Entry, GiveUp } from './contract.js';
import { type Lookahead, moversAhead, mustSeeAny } from './decide.js';
import { LockLostError } from './errors.js';
import type { QueueRequest } from './queue.js';
import type { TracedWait } from './trace.js';

/** What one listing says of our entry: the entries that must go first, none (null), or ours is missing. */
export type Turn = Entry | readonly Entry[] | null | typeof MISSING;
export const MISSING = Symbol('our entry is missing from the listing');

export function turnIn(request: QueueRequest, queue: readonly Entry[], self: Entry): Turn {
  return queue.some((e) => e.key === self.key) ? request.decide(queue, self) : MISSING;
}

/**
 * Whether the waits of `self` may read only the entries ahead (see `Lookahead`): the backend can, the
 * entry is at its own place (an entry placed `at` another is ordered before entries created earlier),
 * and nothing ahead of it in the enqueue's listing could move an entry there that the decision must see.
 */
function mayReadShort(request: QueueRequest, queue: readonly Entry[], self: Entry): boolean {
  const { lookahead } = request;
  if (lookahead === undefined || request.core.backend.listBefore === undefined || request.at !== undefined)
    return false;
  return !mustSeeAny(lookahead, moversAhead(queue, self));
}

/**
 * Reads at once what the listing that came with our new entry says, and lets the listing go: a waiter
 * keeps only its entry and its blocker while it waits. A kept listing would make every waiter cost
 * as much as the queue ahead of it, and a queue of n waiters cost n squared.
 */
export interface FirstLook {
  readonly entry: Entry;
  /** `UNDECIDED` when the enqueue's window of the queue did not decide: the waiter lists the queue. */
  readonly first: Turn | typeof UNDECIDED;
  /** Why the entry may not wait at all (a lost place, a decision that refused the queue), if so. */
  readonly refused: unknown;
  /** With `announceGrant`: whether an entry queued behind ours before the listing was read (see `queuedBehind`). */
  readonly queuedBehind: boolean;
  /** Whether the waits may read only the entries ahead (see `mayReadShort`). */
  readonly shortReads: boolean;
  /** Entries ahead, for the trace, when the enqueue answered with a window (a listing gives it itself). */
  readonly position?: number | undefined;
}

/**
 * The lookahead to enqueue with, where the backend can answer with only the entries just ahead
 * (`enqueueAhead`) and the wait is at the tail with a decision that reads short: that answer does not
 * grow with the queue. Otherwise (undefined) the enqueue answers with the whole queue.
 */
export function windowOf(request: QueueRequest): Lookahead | undefined {
  const { lookahead, at } = request;
  const { backend } = request.core;
  if (at !== undefined || backend.enqueueAhead === undefined || backend.listBefore === undefined) return undefined;
  return lookahead;
}

/**
 * Appends the request's entry, answered with a window of `lookahead.page` entries (see `windowOf`),
 * and with the count of the entries ahead if `traced` (only a trace reports it).
 */
export function enqueueAhead(
  request: QueueRequest,
  lookahead: Lookahead,
  giveUp: GiveUp,
  traced: boolean,
): Promise<EnqueuedAhead> {
  const { queue, entryKind, kind, data, dialect } = request;
  const asked = { page: lookahead.page, count: traced };
  return request.core.backend.enqueueAhead!(queue, entryKind ?? kind, asked, data, dialect, giveUp);
}

/** `firstLook` from a window of the queue: undecided when the window holds no blocker and more is ahead. */
export function firstLookAhead(request: QueueRequest, lookahead: Lookahead, placed: EnqueuedAhead): FirstLook {
  const { entry, ahead, more, movers } = placed;
  const shortReads = !mustSeeAny(lookahead, movers);
  try {
    const turn = request.decide([...ahead].reverse(), entry);
    const first = turn === null && more ? UNDECIDED : turn;
    return { entry, first, refused: undefined, queuedBehind: false, shortReads, position: placed.position };
  } catch (error) {
    return { entry, first: null, refused: error, queuedBehind: false, shortReads, position: placed.position };
  }
}

/** The first look of an enqueue answered with a window of the queue that did not decide. */
export const UNDECIDED = Symbol('the window the enqueue read did not decide');

export function firstLook(request: QueueRequest, { entry, queue }: Enqueued, trace: TracedWait | undefined): FirstLook {
  trace?.enqueued(queue, entry);
  const behind = request.announceGrant === true && queuedBehind(queue, entry);
  const shortReads = mayReadShort(request, queue, entry);
  try {
    const first = turnIn(request, queue, entry);
    return { entry, first, refused: lostPlace(request, queue), queuedBehind: behind, shortReads };
  } catch (error) {
    return { entry, first: null, refused: error, queuedBehind: behind, shortReads };
  }
}

/**
 * Whether the listing that came with our new entry shows one queued after it. Where the create and the
 * listing are two requests (ZooKeeper), that entry's own listing may be older than ours and have shown
 * ours still waiting: it may then be watching ours for its grant, and a grant at first look must be
 * announced too. Where they are one (etcd, memory) nothing is ever behind, and nothing is announced.
 */
export function queuedBehind(queue: readonly Entry[], self: Entry): boolean {
  const last = queue[queue.length - 1];
  return last !== undefined && last.order > self.order;
}

/** Appends the request's entry, or puts it at the place of `at` (an entry of ours). */
export function enqueueAt(request: QueueRequest, at: Entry | undefined, giveUp?: GiveUp): Promise<Enqueued> {
  const { queue, entryKind, kind, data, dialect } = request;
  return request.core.backend.enqueue(queue, entryKind ?? kind, at, data, dialect, giveUp);
}

/**
 * The error for a place taken at another entry's position when that entry is missing from the queue:
 * such a place is only as good as that entry. Had it gone before ours was written (deleted by someone
 * else, or released first on another member), ours would sort ahead of whoever was granted after it.
 */
export function lostPlace(request: QueueRequest, queue: readonly Entry[]): LockLostError | undefined {
  const { at } = request;
  if (at === undefined || queue.some((e) => e.key === at.key)) return undefined;
  return new LockLostError(request.what, {
    cause: new Error(`the entry whose place was to be taken (${at.key}) is gone`),
  });
}

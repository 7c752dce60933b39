import type { Abortable, Backend, Entry, GiveUp, Session, SessionCore } from './contract.js';
import { deadline } from './deadline.js';
import type { Decide, Lookahead } from './decide.js';
import {
  enqueueAhead,
  enqueueAt,
  type FirstLook,
  firstLook,
  firstLookAhead,
  lostPlace,
  MISSING,
  queuedBehind,
  type Turn,
  turnIn,
  UNDECIDED,
  windowOf,
} from './enqueue.js';
import { ClosedError, LockLostError, LockTimeoutError, SessionLostError } from './errors.js';
import type { LockKind } from './events.js';
import { reportWait, warnHoldAfter } from './report.js';
import { type TracedWait, traceWait } from './trace.js';
import type { WaitOptions } from './validate.js';

export interface QueueRequest {
  readonly session: Session;
  /** The session's internals (`coreOf(session)`), looked up once per recipe rather than per wait. */
  readonly core: SessionCore;
  readonly queue: string;
  /** What the wait is reported as (events, metrics). */
  readonly kind: LockKind;
  /** The kind the entry is stored with, when it is not `kind` (a semaphore's carries its counts). */
  readonly entryKind?: string;
  /**
   * A grant after a wait is announced to the waiter behind (see `announceGrant`): set where that waiter
   * may be watching for this entry to be granted rather than to go (a semaphore's next in line).
   */
  readonly announceGrant?: boolean;
  readonly decide: Decide;
  /**
   * How `decide` can read only the entries nearest ahead (see `Lookahead`), where the backend can; without
   * it every wake lists the queue.
   */
  readonly lookahead?: Lookahead;
  /** What traces call the recipe, when not its kind's (a MultiLock's mutex entries say `multilock`). */
  readonly recipe?: string;
  /** For messages: `lock "payments/settlement"`. */
  readonly what: string;
  /** Take the place of this entry of ours instead of the tail (downgrade). */
  readonly at?: Entry | undefined;
  /** Stored with the entry for other sessions to read (an election candidate's id). */
  readonly data?: string;
  /** Whose entry names to write (the recipe's `interop` option), if the backend has a choice. */
  readonly dialect?: string | undefined;
}

/** Throws if the session can no longer take work: closed or lost. */
export function assertUsable(session: Session): void {
  if (session.state === 'closed') throw new ClosedError();
  if (session.state === 'lost') throw new SessionLostError();
}

/**
 * The one waiting loop for every recipe: enqueue, decide, watch the blocker, decide again. On any
 * give-up (timeout, abort, session end, error) our own entry is withdrawn before the promise settles.
 * An entry that vanishes while the session lives is queued again or fails, per the session's `onWaiterLost`.
 * Resolves with the granted entry.
 */
export function waitForTurn(request: QueueRequest, options: WaitOptions): Promise<Entry> {
  const trace = traceWait(request, false, options.timeoutMs);
  if (trace === undefined) return queueUp(request, options, undefined);
  return trace.run(() => queueUp(request, options, trace));
}

async function queueUp(request: QueueRequest, options: WaitOptions, trace: TracedWait | undefined): Promise<Entry> {
  const { session, core } = request;
  assertUsable(session);
  options.signal?.throwIfAborted();
  const startedAt = performance.now();
  const leave = core.enter();
  const report = reportWait(core, request.queue, request.kind, startedAt);
  // An enqueue the backend holds back until it may send it is given up with the wait (see `GiveUp`).
  // Not on the session's signal: thousands held back would each add a listener to it (Node checks
  // each new listener against all the others); at the session's end a held-back one fails at its turn.
  const giveUp: GiveUp = () =>
    deadline(request.what, remainingMs(options, startedAt), [options.signal], options.timeoutMs);
  try {
    // A place in the queue, and another at the tail each time ours vanishes (per `onWaiterLost`).
    for (let turn = request; ; turn = { ...request, at: undefined }) {
      // The enqueue is never abandoned half way: a create in flight must finish so that we can delete it.
      // The enqueue's answer is read at once and not kept: a local holding it would keep its listing
      // alive for as long as the wait lasts (see `firstLook`).
      let look: FirstLook;
      try {
        const window = windowOf(turn);
        look =
          window === undefined
            ? firstLook(turn, await enqueueAt(turn, turn.at, giveUp), trace)
            : firstLookAhead(turn, window, await enqueueAhead(turn, window, giveUp, trace !== undefined));
      } catch (error) {
        throw gaveUpFirst(request.what, options, startedAt, error);
      }
      let { entry } = look;
      try {
        // Never undecided when refused: a refusal lists nothing.
        const first =
          look.first === UNDECIDED ? turnIn(turn, await core.backend.list(turn.queue, entry), entry) : look.first;
        // Once every read of the enqueue is done (a test waits for the position to know that).
        if (look.position !== undefined) trace?.enqueuedAt(look.position);
        if (look.refused !== undefined) throw look.refused;
        if (first === null) {
          // The common case, nobody ahead: granted without setting up a wait at all.
          options.signal?.throwIfAborted();
          session.signal.throwIfAborted();
          if (look.queuedBehind) entry = await announceGrant(turn, entry);
        } else {
          await waitInLine(turn, options, startedAt, entry, first, look.shortReads);
          if (request.announceGrant === true) entry = await announceGrant(turn, entry);
        }
      } catch (error) {
        await core.backend.withdraw(entry);
        if (!(error instanceof EntryVanished)) throw error;
        if (core.onWaiterLost === 'fail') throw new LockLostError(request.what, { cause: error });
        // Again at the tail: a place taken `at` an entry of ours is not ours to take twice.
        continue;
      }
      report?.granted(entry);
      trace?.granted(entry);
      if (options.holdWarningMs !== undefined && (report !== undefined || trace !== undefined))
        warnHoldAfter(entry, options.holdWarningMs);
      return entry;
    }
  } catch (error) {
    report?.gaveUp(error, options.signal);
    trace?.gaveUp(error, options.signal);
    throw error;
  } finally {
    leave();
  }
}

/**
 * The error of an enqueue that failed because the session ended, when the caller had given up before
 * that: the give-up's, as when the wait gives up and its withdraw outlives the session. An enqueue is
 * not cut short (its entry could not be withdrawn otherwise), so against a server that does not answer
 * it ends at the session's deadline, long after a short timeout or an abort.
 */
function gaveUpFirst(what: string, options: WaitOptions, startedAt: number, error: unknown): unknown {
  if (!(error instanceof SessionLostError || error instanceof ClosedError)) return error;
  if (options.signal?.aborted === true) return options.signal.reason;
  const { timeoutMs } = options;
  if (timeoutMs !== undefined && performance.now() - startedAt >= timeoutMs)
    return new LockTimeoutError(what, timeoutMs, { cause: error });
  return error;
}

/**
 * Waits until `self` (queued, with `first` ahead of it) may proceed, or throws: timeout, abort, the
 * session's end, or `EntryVanished`. The caller withdraws the entry on any throw.
 */
async function waitInLine(
  request: QueueRequest,
  options: WaitOptions,
  startedAt: number,
  self: Entry,
  first: Entry | readonly Entry[] | typeof MISSING,
  shortReads: boolean,
): Promise<void> {
  const { session, core, what } = request;
  // One deadline for the whole wait, counted from the call, and across a requeue too.
  const wait = deadline(what, remainingMs(options, startedAt), [options.signal], options.timeoutMs);
  // The session's end reaches the wait through its registration (`ended`); an end before it, here.
  if (session.signal.aborted) wait.cancel(session.signal.reason);
  const unregister = core.waiting({
    entry: self,
    vanished: () => wait.cancel(new EntryVanished('found gone after a reconnect')),
    ended: (reason) => wait.cancel(reason),
  });
  try {
    // Decide again on a fresh listing, never on the last one minus the blocker. Two things can have
    // changed that the blocker's departure does not show: a downgrade puts a read entry at its
    // writer's place, ahead of writers that queued later; and a session closed by the server deletes
    // the blocker and our own entry at once, the blocker's deletion reaching us first. Some request
    // is needed before a grant either way; a listing answers both. A short read (`shortReads`, see
    // `Lookahead`) answers both too: it tells whether our entry is still there, and it is used only
    // where no entry moved ahead of ours since our enqueue can change the decision.
    const { backend } = core;
    const look = (): Promise<Turn> =>
      shortReads
        ? turnAhead(request, backend, self)
        : backend.list(request.queue, self).then((q) => turnIn(request, q, self));
    for (let turn: Turn = first; ; turn = await look()) {
      wait.throwIfCancelled();
      if (turn === MISSING) return await entryVanished(backend, self);
      if (turn === null) break;
      wait.signal.throwIfAborted(); // from here on we would have to wait, so the timeout counts
      await waitAnyGone(backend, turn, wait.signal);
    }
    wait.throwIfCancelled();
    // After a timeout the deadline no longer listens: an abort since then must still count.
    options.signal?.throwIfAborted();
    session.signal.throwIfAborted();
  } finally {
    wait.dispose();
    unregister();
  }
}

/** What is left of the wait's timeout, if it has one. */
function remainingMs(options: WaitOptions, startedAt: number): number | undefined {
  return options.timeoutMs === undefined ? undefined : Math.max(0, options.timeoutMs - (performance.now() - startedAt));
}

/** Enqueue and take the lock only if nothing blocks it right away; otherwise withdraw. Never waits. */
export function tryTurn(request: QueueRequest): Promise<Entry | null> {
  const trace = traceWait(request, true);
  if (trace === undefined) return tryOnce(request, undefined);
  return trace.run(() => tryOnce(request, trace));
}

async function tryOnce(request: QueueRequest, trace: TracedWait | undefined): Promise<Entry | null> {
  const { session, core } = request;
  assertUsable(session);
  const leave = core.enter();
  const report = reportWait(core, request.queue, request.kind);
  try {
    const { entry, queue } = await enqueueAt(request, request.at);
    trace?.enqueued(queue, entry);
    let blocker: ReturnType<Decide>;
    try {
      const placeLost = lostPlace(request, queue);
      if (placeLost !== undefined) throw placeLost;
      blocker = queue.some((e) => e.key === entry.key) ? request.decide(queue, entry) : entry;
    } catch (error) {
      await core.backend.withdraw(entry);
      throw error;
    }
    if (blocker !== null || session.signal.aborted) {
      await core.backend.withdraw(entry);
      // Null either way; only a taken lock is `busy`, a session that ended meanwhile is a failure.
      if (session.signal.aborted) {
        report?.gaveUp(session.signal.reason, undefined);
        trace?.gaveUp(session.signal.reason, undefined);
      } else {
        report?.busy();
        trace?.busy();
      }
      return null;
    }
    let granted = entry;
    if (request.announceGrant === true && queuedBehind(queue, entry)) {
      try {
        granted = await announceGrant(request, entry);
      } catch (error) {
        await core.backend.withdraw(entry);
        throw error instanceof EntryVanished ? new LockLostError(request.what, { cause: error }) : error;
      }
    }
    report?.granted(granted);
    trace?.granted(granted);
    return granted;
  } catch (error) {
    report?.gaveUp(error, undefined);
    trace?.gaveUp(error, undefined);
    throw error;
  } finally {
    leave();
  }
}

/**
 * The turn from the entries just ahead of ours (`Backend.listBefore`): a first page of them, and all of
 * them only if that page did not decide (a reader whose page holds only reads).
 */
async function turnAhead(request: QueueRequest, backend: Backend, self: Entry): Promise<Turn> {
  for (let limit: number | undefined = request.lookahead!.page; ; limit = undefined) {
    const ahead = await backend.listBefore!(request.queue, self, limit);
    if (!ahead.present) return MISSING;
    const turn = request.decide([...ahead.entries].reverse(), self);
    if (turn !== null || !ahead.more || limit === undefined) return turn;
  }
}

/** Our entry left the queue while we waited, and not with the session: someone deleted it. */
class EntryVanished extends Error {}

/**
 * Our own entry is gone while we wait. Usually the session is (the backend's confirm then throws
 * SessionLostError); otherwise someone deleted it, and we do not hold a place in the queue any more.
 */
async function entryVanished(backend: Backend, self: Entry): Promise<never> {
  if (await backend.confirm(self)) throw new EntryVanished('our entry was missing from a listing');
  throw new EntryVanished('our queue entry vanished while waiting');
}

/**
 * Waits until any one of `entries` is gone. Several are watched only where one departure of several
 * may let `self` in (a semaphore's first waiter, behind the holders); the rest of the watches end then.
 */
async function waitAnyGone(backend: Backend, entries: Entry | readonly Entry[], signal: Abortable): Promise<void> {
  if (!isMany(entries)) return backend.waitGone(entries, signal);
  if (entries.length === 1) return backend.waitGone(entries[0]!, signal);
  const done = new AbortController();
  const onAbort = (): void => done.abort(signal.reason);
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await Promise.race(entries.map((entry) => backend.waitGone(entry, done.signal)));
  } finally {
    signal.removeEventListener('abort', onAbort);
    done.abort(ANY_GONE);
  }
}

/** The reason the other watches of `waitAnyGone` end with once one entry went; never seen by a caller. */
const ANY_GONE = new Error('another watched entry went first');

function isMany(entries: Entry | readonly Entry[]): entries is readonly Entry[] {
  return Array.isArray(entries);
}

/**
 * Tells the waiter behind a grant that came after a wait: our entry is put again at its own place and
 * the old one withdrawn, so that a waiter watching the old one (waiting for it to be granted, which a
 * deletion watch cannot see) looks again. The new entry holds what the old one did: same place, same
 * kind, and an entry ordered at a place already taken counts once (see the semaphore's decision).
 */
async function announceGrant(request: QueueRequest, entry: Entry): Promise<Entry> {
  const { backend } = request.core;
  const { entry: moved, queue } = await enqueueAt(request, entry);
  try {
    if (!queue.some((e) => e.key === entry.key))
      throw new EntryVanished('our entry was gone when it was put again at its place');
    await backend.withdraw(entry);
  } catch (error) {
    await backend.withdraw(moved);
    throw error;
  }
  return moved;
}

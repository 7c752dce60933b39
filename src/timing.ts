/**
 * Every interval baton derives from a session's timeout, named once with its reason. A driver or the
 * session asks here rather than dividing the timeout itself, so that the relations between them (a
 * renewal several times per timeout, a close that never waits a whole timeout) stay visible in one page.
 */

/**
 * How long a close waits for the server to end the session (and its entries) before it lets go of the
 * connection: a generous round trip, never a whole session timeout (the server would then end the
 * session anyway).
 */
export function closeLimitMs(timeoutMs: number): number {
  return Math.min(timeoutMs, 2_000);
}

/**
 * How often a session's lease or keys are renewed: four times per session timeout, so that a renewal
 * lost or late still leaves three before the server could expire the session; `floorMs` keeps a tiny
 * test timeout from spinning.
 */
export function keepAlivePaceMs(timeoutMs: number, floorMs = 50): number {
  return Math.max(Math.floor(timeoutMs / 4), floorMs);
}

/**
 * How often a backstop looks at what is waited for, for a notification that never came (a lost
 * notification, a silent watch): at the keep-alive's pace, so that a waiter left behind waits a
 * quarter of a session timeout at most, at the cost of one read per waited queue each time.
 */
export function backstopEveryMs(timeoutMs: number, floorMs = 50): number {
  return Math.max(Math.floor(timeoutMs / 4), floorMs);
}

/**
 * How often an orphan sweep looks at the queues where an enqueue or delete of unknown fate may still
 * be applied: three times per session timeout, often enough that an orphan holds up its queue for a
 * fraction of a timeout, rarely enough to cost little.
 */
export function orphanSweepEveryMs(timeoutMs: number): number {
  return Math.max(Math.floor(timeoutMs / 3), 50);
}

/**
 * How long a connection may stay silent (no answer to anything sent) before it is dropped and dialled
 * again: a third of the session timeout, which leaves the rest of it to reconnect before the deadline.
 */
export function silentAfterMs(timeoutMs: number): number {
  return timeoutMs / 3;
}

/**
 * How long a lost session's client waits for the server to hang up before its socket is destroyed:
 * a third of the timeout, 2 s at most (a generous round trip), so that no open socket keeps the
 * process alive.
 */
export function hangUpLimitMs(timeoutMs: number): number {
  return Math.min(timeoutMs / 3, 2_000);
}

/**
 * How often the session checks its holds with the driver: six times per timeout, so that a hold whose
 * entry was deleted by someone else is noticed well within one; the floor keeps a test timeout sane.
 */
export function holdCheckEveryMs(timeoutMs: number): number {
  return Math.max(Math.floor(timeoutMs / 6), 10);
}

/**
 * The default deadline margin, an eighth of the session timeout: room for a late timer on a busy
 * event loop, and more than half a ZooKeeper tick whenever the session spans more than four ticks
 * (docs/failure-model.md): with the sample `tickTime=2000` and the default 10 s session, a tenth would
 * leave no room at all. None for a session that never expires.
 */
export function defaultDeadlineMarginMs(timeoutMs: number): number {
  return Number.isFinite(timeoutMs) ? Math.round(timeoutMs / 8) : 0;
}

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

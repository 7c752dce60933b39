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

import type { LockHandle } from '../recipes/handle.js';
import { FairMutex } from '../recipes/mutex.js';
import type { ConnectOptions } from '../src/connect.js';
import { connect } from '../src/testing.js';
import { sleep } from './clock.js';
import type { HeldFloor } from './held-floors.js';
import { phaseBoundMs, within } from './scale-queue.js';
import { heapUsed } from './waiters.js';

/** What one session holding `n` locks measured, or why it did not finish. */
export interface HeldOutcome {
  readonly n: number;
  acquireAllMs?: number;
  floorAcquireAllMs?: number;
  heapBytesPerLock?: number;
  /** Requests per second while the session idles, holding nothing, then holding the `n` locks. */
  idleEmptyPerSecond?: number;
  idleHoldingPerSecond?: number;
  closeMs?: number | undefined;
  sessionLost?: boolean;
  didNotFinish?: string;
}

/** Requests per second over `ms` of idling. */
async function idleRate(requests: () => Promise<number>, ms: number): Promise<number> {
  const [before, started] = [await requests(), performance.now()];
  await sleep(ms);
  return (((await requests()) - before) / (performance.now() - started)) * 1000;
}

/**
 * One session takes `n` distinct locks at once (a scheduler locking each account), idles holding
 * them, and closes; then the raw floor takes as many on one connection of the same client.
 */
export async function heldLocks(
  url: string,
  options: ConnectOptions,
  n: number,
  idleMs: number,
  requests: () => Promise<number>,
  floor: HeldFloor,
): Promise<HeldOutcome> {
  const outcome: HeldOutcome = { n };
  const session = await connect(url, options);
  let closed = false;
  try {
    outcome.idleEmptyPerSecond = await idleRate(requests, idleMs);
    const heapBefore = await heapUsed();
    const started = performance.now();
    const handles: LockHandle[] = [];
    const name = `held-${n}-${Date.now()}`;
    let failure: string | undefined;
    const all = Promise.all(
      Array.from({ length: n }, async (_, i) => handles.push(await new FairMutex(session, `${name}/${i}`).acquire())),
    ).catch((error: unknown) => void (failure = `${(error as Error).name}: ${(error as Error).message}`));
    const done = await within(all, phaseBoundMs(n));
    if (!done || failure !== undefined) {
      const why = failure ?? `not done after ${phaseBoundMs(n) / 1000} s`;
      outcome.didNotFinish = `acquiring: ${why} (${handles.length} of ${n} held)`;
      outcome.sessionLost = session.signal.aborted;
      return outcome;
    }
    outcome.acquireAllMs = performance.now() - started;
    outcome.heapBytesPerLock = ((await heapUsed()) - heapBefore) / n;
    await sleep(2_000); // the acquisitions' own requests settle
    outcome.idleHoldingPerSecond = await idleRate(requests, idleMs);
    outcome.sessionLost = session.signal.aborted;
    const closing = performance.now();
    closed = await within(session.close(), 60_000);
    outcome.closeMs = closed ? performance.now() - closing : undefined;
  } finally {
    if (!closed) await within(session.close(), 30_000);
  }
  try {
    const floorStarted = performance.now();
    const held = await floor(n);
    outcome.floorAcquireAllMs = performance.now() - floorStarted;
    await held.close();
  } catch (error) {
    process.stdout.write(`  the floor holding ${n} locks did not finish: ${(error as Error).message}\n`);
  }
  return outcome;
}

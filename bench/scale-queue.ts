import { setMaxListeners } from 'node:events';

import type { Session } from '../recipes/contract.js';
import { FairMutex } from '../recipes/mutex.js';
import type { ConnectOptions } from '../src/connect.js';
import { internalsOf } from '../src/session.js';
import { connect } from '../src/testing.js';
import { sleep } from './clock.js';
import type { FloorEntry, FloorQueue } from './scale-floors.js';
import { heapUsed } from './waiters.js';

/** Sessions the waiters are spread over; one more holds the lock while they queue. */
export const WAITER_SESSIONS = 4;

/** What one run of N waiters on one lock measured, or why it did not finish. */
export interface QueueOutcome {
  readonly n: number;
  /** From the first acquire until every waiter is queued on the server. */
  queueMs?: number;
  /** From the holder's release until the last waiter has had its turn. */
  drainMs?: number;
  requestsQueueing?: number;
  requestsDraining?: number;
  heapBytesPerWaiter?: number;
  /** Sessions whose signal aborted (lost) by the end; undefined for the floors, which keep none. */
  sessionsLost?: number;
  didNotFinish?: string;
}

/** How long each phase (queueing, draining) of a run of `n` waiters may take before it is given up. */
export function phaseBoundMs(n: number): number {
  return 30_000 + n * 12;
}

/** Settles with whether `promise` settled within `ms`. */
export async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  try {
    return await Promise.race([promise.then(() => true), expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Polls until `ready()` holds, `failed()` names a failure, or `ms` pass; returns the failure or the timeout. */
async function until(ready: () => boolean, failed: () => string | undefined, ms: number): Promise<string | undefined> {
  const deadline = performance.now() + ms;
  while (!ready()) {
    const failure = failed();
    if (failure !== undefined) return failure;
    if (performance.now() > deadline) return `not done after ${(ms / 1000).toFixed(0)} s`;
    await sleep(5);
  }
  return undefined;
}

/** Opens the holder's session and the waiters' sessions, closes them all, each close bounded. */
async function withSessions<T>(
  url: string,
  options: ConnectOptions,
  run: (holder: Session, waiters: readonly Session[]) => Promise<T>,
): Promise<T> {
  const sessions: Session[] = [];
  try {
    for (let i = 0; i <= WAITER_SESSIONS; i += 1) sessions.push(await connect(url, options));
    return await run(sessions[0]!, sessions.slice(1));
  } finally {
    await Promise.all(sessions.map((session) => within(session.close(), 30_000)));
  }
}

/**
 * baton: a holder on its own session; `n` acquires of the same lock spread over `WAITER_SESSIONS`
 * sessions, each releasing as soon as it holds. Queued means every acquire has its entry on the
 * server and waits (the sessions' registered waits); the holder releases then.
 */
export function batonQueue(
  url: string,
  options: ConnectOptions,
  name: string,
  n: number,
  requests: () => Promise<number>,
): Promise<QueueOutcome> {
  return withSessions(url, options, async (holderSession, sessions) => {
    const outcome: QueueOutcome = { n };
    const mutexes = sessions.map((session) => new FairMutex(session, name));
    const holder = await new FairMutex(holderSession, name).acquire();
    const abort = new AbortController();
    // Every waiter listens on this one signal: the bench's way to give up, not a leak.
    setMaxListeners(0, abort.signal);
    let failure: string | undefined;
    let done = 0;
    const before = { heap: await heapUsed(), requests: await requests() };
    const started = performance.now();
    const turns = Array.from({ length: n }, async (_, i) => {
      try {
        await (await mutexes[i % WAITER_SESSIONS]!.acquire({ signal: abort.signal })).release();
        done += 1;
      } catch (error) {
        failure ??= `${(error as Error).name}: ${(error as Error).message}`;
      }
    });
    const waiting = (): number => sessions.reduce((sum, session) => sum + internalsOf(session).waitingCount, 0);
    const notQueued = await until(
      () => waiting() >= n,
      () => failure,
      phaseBoundMs(n),
    );
    if (notQueued === undefined) {
      outcome.queueMs = performance.now() - started;
      outcome.requestsQueueing = (await requests()) - before.requests;
      outcome.heapBytesPerWaiter = ((await heapUsed()) - before.heap) / n;
      const drainRequests = await requests();
      const releasedAt = performance.now();
      await holder.release();
      const notDrained = await until(
        () => done === n,
        () => failure,
        phaseBoundMs(n),
      );
      if (notDrained === undefined) {
        outcome.drainMs = performance.now() - releasedAt;
        outcome.requestsDraining = (await requests()) - drainRequests;
      } else outcome.didNotFinish = `draining: ${notDrained} (${done} of ${n} had their turn)`;
    } else outcome.didNotFinish = `queueing: ${notQueued} (${waiting()} of ${n} queued)`;
    outcome.sessionsLost = [holderSession, ...sessions].filter((session) => session.signal.aborted).length;
    abort.abort(new Error('the benchmark gave up'));
    await within(Promise.all(turns), 30_000);
    return outcome;
  });
}

/** The same run on a raw floor: the enqueue's reply is what says an entry is queued. */
export async function floorQueue(floor: FloorQueue, n: number, requests: () => Promise<number>): Promise<QueueOutcome> {
  const outcome: QueueOutcome = { n };
  try {
    const holder = await floor.enqueue();
    await holder.turn;
    const before = { heap: await heapUsed(), requests: await requests() };
    const started = performance.now();
    const entries: FloorEntry[] = [];
    const queued = Promise.all(Array.from({ length: n }, async () => entries.push(await floor.enqueue())));
    if (!(await within(queued, phaseBoundMs(n)))) {
      outcome.didNotFinish = `queueing: not done after ${phaseBoundMs(n) / 1000} s (${entries.length} of ${n})`;
      return outcome;
    }
    outcome.queueMs = performance.now() - started;
    outcome.requestsQueueing = (await requests()) - before.requests;
    outcome.heapBytesPerWaiter = ((await heapUsed()) - before.heap) / n;
    const drainRequests = await requests();
    const releasedAt = performance.now();
    let done = 0;
    const turns = entries.map(async (entry) => {
      await entry.turn;
      await entry.release();
      done += 1;
    });
    await holder.release();
    if (await within(Promise.all(turns), phaseBoundMs(n))) {
      outcome.drainMs = performance.now() - releasedAt;
      outcome.requestsDraining = (await requests()) - drainRequests;
    } else outcome.didNotFinish = `draining: not done after ${phaseBoundMs(n) / 1000} s (${done} of ${n})`;
    return outcome;
  } catch (error) {
    outcome.didNotFinish = `${(error as Error).name}: ${(error as Error).message}`;
    return outcome;
  } finally {
    await within(floor.close(), 30_000);
  }
}

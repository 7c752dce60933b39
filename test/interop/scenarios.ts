import { expect } from 'vitest';

import type { LeaderElection } from '../../recipes/election.js';
import type { LockHandle } from '../../recipes/handle.js';
import type { Lock } from '../../recipes/mutex.js';
import type { Peer } from '../harness/interop-peers.js';
import { eventually, later, track } from '../harness/wait.js';

/**
 * What the scenarios need of a contender, baton's or a peer's: start acquiring, learn of the grant,
 * release. A peer (a Curator, kazoo or etcdctl process) already has this shape.
 */
export interface Contender {
  readonly name: string;
  acquire(): void;
  granted(timeoutMs?: number): Promise<void>;
  isGranted(): boolean;
  /** When (`performance.now()`) the grant of the last acquire was seen here; undefined before. */
  readonly grantedAt: number | undefined;
  release(timeoutMs?: number): Promise<void>;
}

/**
 * How long a contender that must wait is watched for a wrong grant. A grant follows the listing that
 * comes with the entry's create within a round trip or two (milliseconds on loopback); this leaves
 * room for a JVM or Python peer that is slow to act on its listing on a loaded 2-core machine.
 */
const WRONG_GRANT_WINDOW_MS = 750;
const GRANT_TIMEOUT_MS = 15_000;

/** A baton lock (or a campaign) as a contender. Releasing before the grant gives the wait up. */
export function batonContender(name: string, take: (signal: AbortSignal) => Promise<LockHandle>): Contender {
  let attempt:
    { stop: AbortController; handle: ReturnType<typeof track<LockHandle>>; grantedAt: number | undefined } | undefined;
  return {
    name,
    acquire() {
      const stop = new AbortController();
      const current = { stop, handle: track(later(take(stop.signal))), grantedAt: undefined as number | undefined };
      current.handle.promise.then(
        () => void (current.grantedAt = performance.now()),
        () => undefined,
      );
      attempt = current;
    },
    get grantedAt() {
      return attempt?.grantedAt;
    },
    async granted(timeoutMs = GRANT_TIMEOUT_MS) {
      await eventually(`${name} granted`, () => attempt?.handle.settled === true, timeoutMs);
      await attempt!.handle.promise;
    },
    isGranted: () => attempt?.handle.settled === true && attempt.handle.failure === undefined,
    async release() {
      if (attempt === undefined) return;
      attempt.stop.abort();
      const lock = await attempt.handle.promise.catch(() => undefined);
      await lock?.release();
    },
  };
}

export function lockContender(name: string, lock: Lock): Contender {
  return batonContender(name, (signal) => lock.acquire({ signal }));
}

export function campaignContender(name: string, election: LeaderElection): Contender {
  return batonContender(name, (signal) => election.campaign({ signal }));
}

/**
 * `holder` releases and `next` is granted: not before the release was asked for. With `staysWaiting`
 * before it, this catches a wrong grant both inside its window and after it.
 */
export async function handOff(holder: Contender, next: Contender): Promise<void> {
  const asked = performance.now();
  await holder.release();
  await next.granted();
  expect(next.grantedAt, `${next.name} granted before ${holder.name} was asked to release`).toBeGreaterThanOrEqual(
    asked,
  );
}

/** Fails if the contender is granted within the window: it must be waiting. */
export async function staysWaiting(contender: Contender, why: string): Promise<void> {
  const until = Date.now() + WRONG_GRANT_WINDOW_MS;
  while (Date.now() < until) {
    expect(contender.isGranted(), `${contender.name} granted while ${why}`).toBe(false);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  expect(contender.isGranted(), `${contender.name} granted while ${why}`).toBe(false);
}

/** Starts `contender` and waits until its entry is in the queue (`queued()` counts the queue's entries). */
export async function enqueue(contender: Contender, queued: () => Promise<number>, expected: number): Promise<void> {
  contender.acquire();
  await eventually(
    `${contender.name} queued as entry ${expected}`,
    async () => (await queued()) >= expected,
    GRANT_TIMEOUT_MS,
  );
}

/**
 * One lock shared by a baton client and a peer, every way round: the peer holds and baton waits until
 * it releases; baton holds and the peer waits until it releases; then a queue of both clients, alternating,
 * is served in the order it queued, one holder at a time.
 */
export async function exclusionAndFifo(
  make: { baton: (n: number) => Promise<Contender>; peer: (n: number) => Promise<Contender> },
  queued: () => Promise<number>,
): Promise<void> {
  const [p1, p2, p4] = await Promise.all([make.peer(1), make.peer(2), make.peer(4)]);
  const [b1, b3, b5] = await Promise.all([make.baton(1), make.baton(3), make.baton(5)]);

  // The peer holds; baton waits, and is granted once the peer releases.
  p1.acquire();
  await p1.granted();
  await enqueue(b1, queued, 2);
  await staysWaiting(b1, `${p1.name} holds`);
  await handOff(p1, b1);

  // baton holds; the peer waits, and is granted once baton releases.
  await enqueue(p2, queued, 2);
  await staysWaiting(p2, `${b1.name} holds`);
  await handOff(b1, p2);

  // Both clients queued alternately behind the peer's hold: served first come, first served.
  await enqueue(b3, queued, 2);
  await enqueue(p4, queued, 3);
  await enqueue(b5, queued, 4);
  await servedInOrder([p2, b3, p4, b5]);
}

/** `order[0]` holds and the rest wait in this order: each release grants exactly the next. */
export async function servedInOrder(order: readonly Contender[]): Promise<void> {
  for (let i = 0; i < order.length; i += 1) {
    const [holder, next] = [order[i]!, order[i + 1]];
    if (next !== undefined) await staysWaiting(next, `${holder.name} holds`);
    for (const behind of order.slice(i + 2))
      expect(behind.isGranted(), `${behind.name} granted out of turn`).toBe(false);
    if (next !== undefined) await handOff(holder, next);
    else await holder.release();
  }
}

/** One client's side of a read/write lock: new read and write contenders. */
export interface RwClient {
  read(): Promise<Contender>;
  write(): Promise<Contender>;
}

/**
 * A read/write lock shared by two clients, `x` and `y` (run it both ways round): a writer of one waits
 * for a reader of the other holding alone, and the reverse; readers of both share; a reader of one that
 * queued behind a writer of the other waits for it (no starvation of writers).
 */
export async function sharedReadsExclusiveWrites(
  x: RwClient,
  y: RwClient,
  queued: () => Promise<number>,
): Promise<void> {
  const [xr1, xr2, xw] = await Promise.all([x.read(), x.read(), x.write()]);
  const [yr1, yr2, yw] = await Promise.all([y.read(), y.read(), y.write()]);
  // y's writer waits for x's lone reader; x's next reader waits for y's writer.
  await enqueue(xr1, queued, 1);
  await xr1.granted();
  await enqueue(yw, queued, 2);
  await staysWaiting(yw, `${xr1.name} reads`);
  await handOff(xr1, yw);
  await enqueue(xr2, queued, 2);
  await staysWaiting(xr2, `${yw.name} writes`);
  await handOff(yw, xr2);
  // Readers of both clients hold at once.
  await enqueue(yr1, queued, 2);
  await yr1.granted();
  // x's writer waits for both readers, then for y's lone reader; y's next reader waits behind it. (No
  // reader waits with a writer queued behind it: kazoo 2.8 would wait for that writer too and deadlock,
  // python-zk/kazoo#649.)
  await enqueue(xw, queued, 3);
  await enqueue(yr2, queued, 4);
  await staysWaiting(xw, 'two readers hold');
  await xr2.release();
  await staysWaiting(xw, `${yr1.name} reads`);
  await staysWaiting(yr2, `${xw.name} queued before it`);
  await handOff(yr1, xw);
  await staysWaiting(yr2, `${xw.name} writes`);
  await handOff(xw, yr2);
  await yr2.release();
}

/**
 * One election, baton and a peer campaigning: one leader at a time, in the order they campaigned, and
 * both clients name the same leader: baton's `leader()` and `observe()` name the peer's candidate by
 * the id its client stored, and the peer names baton's.
 */
export async function oneLeader(opts: {
  baton: (id: string) => Promise<{ contender: Contender; election: LeaderElection }>;
  peer: (id: string) => Promise<Peer>;
  observer: LeaderElection;
  queued: () => Promise<number>;
}): Promise<void> {
  const stop = new AbortController();
  const seen: (string | null)[] = [];
  const observing = later(
    (async () => {
      for await (const leader of opts.observer.observe({ signal: stop.signal })) seen.push(leader?.id ?? null);
    })(),
  );
  const [peerA, peerB] = await Promise.all([opts.peer('peer-a'), opts.peer('peer-b')]);
  const { contender: batonC } = await opts.baton('baton-c');

  peerA.acquire();
  await peerA.granted();
  await eventually('baton names the peer leader', async () => (await opts.observer.leader()) === 'peer-a');
  await enqueue(batonC, opts.queued, 2);
  await staysWaiting(batonC, 'peer-a leads');
  await handOff(peerA, batonC);
  expect(await opts.observer.leader()).toBe('baton-c');
  await eventually('the peer names baton leader', async () => (await peerB.leader()) === 'baton-c');

  await enqueue(peerB, opts.queued, 2);
  await staysWaiting(peerB, 'baton-c leads');
  await handOff(batonC, peerB);
  await eventually('baton names the second peer leader', async () => (await opts.observer.leader()) === 'peer-b');
  await eventually('the observer saw every term', () => seen.filter((id) => id !== null).length >= 3);
  await peerB.release();
  stop.abort();
  await observing.catch(() => undefined);
  expect(seen.filter((id) => id !== null)).toEqual(['peer-a', 'baton-c', 'peer-b']);
}

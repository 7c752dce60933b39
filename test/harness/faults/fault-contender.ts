import type { Session } from '../../../recipes/contract.js';
import { LockTimeoutError } from '../../../recipes/errors.js';
import type { LockHandle } from '../../../recipes/handle.js';
import { FairMutex } from '../../../recipes/mutex.js';
import type { ConnectOptions } from '../../../src/connect.js';
// The testing connect: a session expired from a second connection needs its credentials (see expireSession).
import { connect } from '../../../src/testing.js';
import { type EtcdInfo, revokeLease } from '../backends/etcd.js';
import { expireMysqlSession } from '../backends/mysql.js';
import { expirePostgresSession } from '../backends/postgres.js';
import { expireRedisSession, type RedisInfo } from '../backends/redis.js';
import { expireZkSession, type ZkInfo } from '../backends/zookeeper.js';
import { type HolderWrite, writeAsHolder } from '../checkers/fenced-register.js';

/** A belief interval: from the moment a worker's acquire resolved until it exited or was told it lost. */
export interface Interval {
  readonly worker: number;
  /** The session the hold was granted to. */
  readonly session: string;
  readonly token: string;
  readonly from: string;
  readonly to: string;
  /** False when the signal had already aborted as the acquire resolved: no belief to check. */
  readonly believed: boolean;
  readonly lost: boolean;
  /**
   * From when (same clock as `from`) this hold's belief may outlast the grant to the next holder,
   * because the test asked the server to end its session: the moment it asked, or the grant itself if
   * that came while the request was still unanswered (the server may act at any moment until it
   * answers; after a request that failed, until three session timeouts later). A hold granted after
   * that gets no excuse: it would be a grant on a dead session. Nothing lets a client foresee a
   * server-side end, so from then on only fencing keeps the holder out, and the checks treat it so.
   */
  readonly forcedAt?: string;
  /** When the hold's first write was sent (absent if it made none). */
  readonly writeAt?: string;
  /** The write made at the start of the hold; absent if the signal had already aborted. */
  readonly write?: HolderWrite;
  /** Only when lost: the write a process that ignored its signal would still make. */
  readonly late?: HolderWrite;
}

/** What one contender does; the whole object travels to the worker process as JSON. */
export interface ContendPlan {
  readonly url: string;
  readonly options: ConnectOptions;
  readonly worker: number;
  /** The most holds to take; the test usually says stop before. */
  readonly count: number;
  readonly holdMs: number;
  /** The fenced register every hold writes to. */
  readonly registerUrl: string;
  /** The whole run gives up after this long. */
  readonly limitMs: number;
  /** An acquire gives up after this long (default `limitMs`) and the contender reports a stall. */
  readonly acquireTimeoutMs?: number;
  /** The servers, reached directly, for ending this contender's session from the server side. */
  readonly expiry?:
    | { readonly zk: ZkInfo }
    | { readonly etcd: EtcdInfo }
    | { readonly postgres: { readonly url: string; readonly schema: string } }
    | { readonly redis: RedisInfo }
    | { readonly mysql: { readonly url: string } };
}

/**
 * A request to end a session from the server side: when it was made, and until when the server may
 * act on it (its answer; for a request that failed, a bound the test sets); absent while on its way.
 */
export interface Forced {
  readonly asked: bigint;
  readonly answered?: bigint;
}

/** See `Interval.forcedAt`: from when a hold granted at `from` may be ended by the server unforeseen. */
export function excusedFrom(forced: Forced | undefined, from: bigint): bigint | undefined {
  if (forced === undefined) return undefined;
  if (forced.asked > from) return forced.asked;
  return forced.answered === undefined || from < forced.answered ? from : undefined;
}

/** What a contender reports while it runs. */
export type ContendEvent =
  /** The acquire resolved: the worker holds until its interval is reported. */
  | { readonly type: 'granted'; readonly worker: number }
  | { readonly type: 'interval'; readonly interval: Interval }
  /** An acquire timed out: a waiter that nothing woke for `acquireTimeoutMs`. */
  | { readonly type: 'stall'; readonly worker: number; readonly session: string; readonly waitedMs: number }
  /** A new session could not be opened (the contender tries again shortly). */
  | { readonly type: 'connect-failed'; readonly worker: number; readonly error: string }
  /** The contender starts an await of its loop: what the run names if the process has to be killed. */
  | { readonly type: 'step'; readonly worker: number; readonly step: ContendStep };

/** The awaits of a contender's loop, reported as it enters each. */
export type ContendStep = 'connect' | 'acquire' | 'write' | 'hold' | 'late write' | 'release' | 'close';

/** How the process running a contender steers it. */
export interface ContendControl {
  /** True once the contender should stop after its current hold. */
  stopped(): boolean;
  /** Told of every session the contender opens, so that the test can end it (see `expireSession`). */
  opened?(session: Session): void;
  /**
   * When (process.hrtime.bigint()) the test asked the server to end this session, if it did, and until
   * when the server may act on it: its answer, or three session timeouts after a failure (absent while
   * the request is on its way).
   */
  forced?(sessionId: string): Forced | undefined;
  /**
   * While true, a hold goes on past `holdMs` until its signal aborts: the test holds a holder inside
   * through a fault it injects, as a long job would be, so that only the signal ends its belief.
   */
  lingering?(): boolean;
}

/** Ends `session` from the server side, as an operator (or the server, when it expires it) would. */
export function expireSession(plan: ContendPlan, session: Session): Promise<void> {
  if (plan.expiry === undefined) throw new Error('this run has no servers to expire sessions on');
  if ('postgres' in plan.expiry)
    return expirePostgresSession(plan.expiry.postgres.url, session, plan.expiry.postgres.schema);
  if ('redis' in plan.expiry) return expireRedisSession(plan.expiry.redis, session);
  if ('mysql' in plan.expiry) return expireMysqlSession(plan.expiry.mysql.url, session);
  return 'zk' in plan.expiry ? expireZkSession(plan.expiry.zk, session) : revokeLease(plan.expiry.etcd, session);
}

/** The pause before a contender tries again to open a session after a failed connect. */
const CONNECT_RETRY_MS = 250;

const now = (): bigint => process.hrtime.bigint(); // CLOCK_MONOTONIC: comparable across processes

/**
 * Stays inside for `holdMs`, and then for as long as `lingering()` says (a job that runs on through a
 * fault), unless the signal aborts first.
 */
function hold(lock: LockHandle, holdMs: number, lingering: () => boolean): Promise<void> {
  return new Promise<void>((resolve) => {
    if (lock.signal.aborted) return resolve(); // an abort already passed fires no event
    let timer: NodeJS.Timeout;
    const wait = (ms: number): void => {
      timer = setTimeout(() => (lingering() ? wait(5) : resolve()), ms);
    };
    wait(holdMs);
    lock.signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}

/**
 * A contender that survives faults: when its session is lost it opens a new one and goes on. Each hold
 * writes its token to the fenced register, stays inside for `holdMs` unless its signal aborts first,
 * and, if it was told it lost the lock, writes once more as a process that missed the news would.
 * Reports one interval per hold; stops after `count` holds, when `stopped()` says so, or at `limitMs`.
 */
export async function contendThroughFaults(
  plan: ContendPlan,
  report: (event: ContendEvent) => void,
  control: ContendControl,
): Promise<{ sessions: number }> {
  const giveUpAt = Date.now() + plan.limitMs;
  const step = (name: ContendStep): void => report({ type: 'step', worker: plan.worker, step: name });
  let session: Session | undefined;
  let sessions = 0;
  try {
    for (let done = 0, attempts = 0; done < plan.count && !control.stopped(); attempts += 1) {
      if (attempts > plan.count * 4 || Date.now() > giveUpAt)
        throw new Error(`worker ${plan.worker}: ${done} holds in ${attempts} attempts`);
      if (session === undefined || session.state === 'lost') {
        if (session !== undefined) step('close');
        await session?.close();
        session = undefined;
        try {
          step('connect');
          session = await connect(plan.url, plan.options);
        } catch (error) {
          // As an application would (and as connect's reconnectAfterLoss does): report it, try again soon.
          report({
            type: 'connect-failed',
            worker: plan.worker,
            error: error instanceof Error ? `${error.constructor.name}: ${error.message}` : String(error),
          });
          await new Promise((resolve) => setTimeout(resolve, CONNECT_RETRY_MS));
          continue;
        }
        sessions += 1;
        control.opened?.(session);
      }
      let lock;
      const asked = Date.now();
      try {
        step('acquire');
        lock = await new FairMutex(session, 'faults').acquire({ timeoutMs: plan.acquireTimeoutMs ?? plan.limitMs });
      } catch (error) {
        if (error instanceof LockTimeoutError)
          report({ type: 'stall', worker: plan.worker, session: session.id, waitedMs: Date.now() - asked });
        continue; // otherwise the session was lost while waiting: a new one queues again
      }
      const from = now();
      const believed = !lock.signal.aborted;
      report({ type: 'granted', worker: plan.worker });
      const writeAt = now();
      if (believed) step('write');
      const write = believed ? await writeAsHolder(plan.registerUrl, lock.fencingToken, lock.signal) : undefined;
      step('hold');
      await hold(lock, plan.holdMs, () => control.lingering?.() ?? false);
      const lost = lock.signal.aborted;
      const to = now();
      if (lost) step('late write');
      const late = lost ? await writeAsHolder(plan.registerUrl, lock.fencingToken, lock.signal) : undefined;
      const forcedAt = excusedFrom(control.forced?.(session.id), from);
      const interval = {
        worker: plan.worker,
        session: session.id,
        token: lock.fencingToken.toString(),
        from: from.toString(),
        to: to.toString(),
        believed,
        lost,
      };
      const extra = {
        ...(write && { write, writeAt: writeAt.toString() }),
        ...(late && { late }),
        ...(forcedAt !== undefined && forcedAt < to && { forcedAt: forcedAt.toString() }),
      };
      report({ type: 'interval', interval: { ...interval, ...extra } });
      step('release');
      await lock.release().catch(() => undefined);
      done += 1;
    }
  } finally {
    if (session !== undefined) step('close');
    await session?.close();
  }
  return { sessions };
}

/**
 * When a hold's belief stops counting for mutual exclusion: when it ended, or, if the test had its
 * session ended from the server side meanwhile, its `forcedAt` (fencing's case from then on).
 */
export function beliefEnd(interval: Interval): bigint {
  const to = BigInt(interval.to);
  return interval.forcedAt !== undefined && BigInt(interval.forcedAt) < to ? BigInt(interval.forcedAt) : to;
}

/**
 * No two belief intervals overlap, and tokens strictly increase in grant order. Holds whose signal
 * had aborted before the holder learned of the grant carry no belief and are left out. A hold whose
 * session the test ended from the server side may outlast the next grant from `Interval.forcedAt` on,
 * but the later holder's token must still be higher.
 */
export function checkIntervals(intervals: readonly Interval[]): string[] {
  const sorted = intervals.filter((i) => i.believed).sort((a, b) => (BigInt(a.from) < BigInt(b.from) ? -1 : 1));
  const violations: string[] = [];
  const described = (x: Interval): string => `worker ${x.worker} (session ${x.session}, token ${x.token})`;
  let believing: Interval | undefined; // of the earlier holds, the one whose belief counts longest
  for (let i = 0; i < sorted.length; i += 1) {
    const after = sorted[i]!;
    if (believing !== undefined && BigInt(after.from) < beliefEnd(believing))
      violations.push(`${described(after)} granted while ${described(believing)} still believed it held`);
    const before = sorted[i - 1];
    if (before !== undefined && BigInt(after.token) <= BigInt(before.token))
      violations.push(`${described(after)} granted after ${described(before)} with a token not higher`);
    if (believing === undefined || beliefEnd(after) > beliefEnd(believing)) believing = after;
  }
  return violations;
}

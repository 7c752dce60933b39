import { type DescribedEntry, type Session, type SessionCore, untilAborted } from './contract.js';
import { deadline } from './deadline.js';
import { exclusive, shared } from './decide.js';
import { askOf, semaphoreHolders } from './permits.js';
import { assertUsable } from './queue.js';
import { type RequestOptions, validateWaitOptions } from './validate.js';

/**
 * One contender in a recipe's queue, as `participants()` reports it (and `baton inspect` prints it):
 * baton's entries and peers' (Curator, kazoo, etcd's Go recipes) alike, in queue order.
 */
export interface Participant {
  /** 1 for the head of the queue. */
  readonly position: number;
  /**
   * `holder` when nothing ahead of the entry blocks it, by the rules the recipes decide with (it holds,
   * or is being told it does); `waiter` otherwise. An election's holder is its leader.
   */
  readonly role: 'holder' | 'waiter';
  /** `lock`, `read`, `write`, `candidate`, `exclusive` (a peer's whose recipe cannot be told) or `semaphore`. */
  readonly kind: string;
  /** A semaphore entry's permits held or asked for. */
  readonly count?: number;
  /** The permits of the semaphore a semaphore entry was made for. */
  readonly permits?: number;
  /** Whose naming the entry has: `baton`, `curator` (also baton's default on ZooKeeper), `kazoo`, `etcd-go`, `baton-0.1`. */
  readonly client: string;
  /** The owning session: ZooKeeper session id (hex), etcd lease id, `pg-<id>`, Redis session id, memory session. */
  readonly sessionId: string;
  /** Milliseconds since the server created the entry; null where the server keeps no time (etcd). */
  readonly ageMs: number | null;
  /** How long the owner's lease lives if it is not renewed any more; null where the server does not say. */
  readonly expiresInMs: number | null;
  /** The entry's fencing token (what its holder hands to the resources it protects). */
  readonly fencingToken: bigint;
  /** An election candidate's id (what `leader()` reports); `''` for locks. */
  readonly id: string;
  /** The backend's key of the entry: a znode path, an etcd key, a row or member id. */
  readonly key: string;
}

/**
 * The contenders of `queue`, in order. Rejects with `LockTimeoutError` after `options.timeoutMs`, with
 * `signal.reason` on abort, with the session's error when it ends, or with the backend's error.
 */
export async function listParticipants(
  session: Session,
  core: SessionCore,
  queue: string,
  options: unknown,
): Promise<Participant[]> {
  const { timeoutMs, signal } = validateWaitOptions(options);
  assertUsable(session);
  signal?.throwIfAborted();
  const wait = deadline(`the participants of "${queue}"`, timeoutMs, [signal, session.signal]);
  try {
    const described = await untilAborted(core.describe(queue), wait.signal);
    return participantsOf(described, Date.now());
  } finally {
    wait.dispose();
  }
}

/** The contenders a description of a queue shows, at `now` (ms since the epoch): `baton inspect` shows the same. */
export function participantsOf(described: readonly DescribedEntry[], now: number): Participant[] {
  const queue = described.map((info) => info.entry);
  // A semaphore's holders are the entries ahead whose counts fit in its permits.
  const permitted = semaphoreHolders(queue);
  return described.map((info, index) => {
    const ask = askOf(info.entry.kind);
    const decide = info.entry.kind === 'read' ? shared : exclusive;
    const holds = ask === null ? decide(queue, info.entry) === null : permitted.has(info.entry);
    return {
      position: index + 1,
      role: holds ? 'holder' : 'waiter',
      ...(ask === null ? { kind: info.entry.kind } : { kind: 'semaphore', count: ask.count, permits: ask.permits }),
      client: info.client,
      sessionId: info.owner,
      ageMs: info.createdAt === undefined ? null : Math.max(0, now - info.createdAt),
      expiresInMs: info.expiresInMs ?? null,
      fencingToken: info.entry.fencingToken,
      id: info.data,
      key: info.entry.key,
    };
  });
}

/** Options of `participants()`: how long to wait for the server's answer, and a signal to give up. */
export type ParticipantsOptions = RequestOptions;

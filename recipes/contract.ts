/**
 * The port the recipes need from a backend, and the view of a session they work through.
 * Recipes import only this file and their siblings; they never know which backend runs them.
 */
import type { Mover } from './decide.js';
import type { LockEvent, LockListener } from './events.js';

/**
 * A session's state: `connected`; `suspended` while the connection is down but the session may live;
 * `lost` (expired, or its deadline passed) and `closed` (by `close()`), both final.
 */
export type SessionState = 'connected' | 'suspended' | 'lost' | 'closed';

/** One contender in a queue. Lives exactly as long as the session that created it. */
export interface Entry {
  /** The queue (validated lock name) the entry belongs to. */
  readonly queue: string;
  /** Backend-specific full key: a znode path, an etcd key, a memory key. Unique for all time. */
  readonly key: string;
  /**
   * What the entry asks for: `lock`, `read`, `write`, `candidate`, `exclusive` (a peer's), or a kind
   * with parameters, lowercase letters then `_<digits>` groups (`semaphore_2_5`: 2 of 5 permits). A
   * backend stores a kind with its entry's name and gives it back as it was written, so that a
   * decision reads it from a listing without a read per entry.
   */
  readonly kind: string;
  /** Server order within the queue (ZooKeeper sequence, etcd create revision). */
  readonly order: bigint;
  /**
   * Strictly increases across successive holders of one queue, even if the queue is re-created; fits a
   * signed 64-bit integer. Known for the entries this session enqueued; for another session's entry a
   * backend may know it only once `read` (ZooKeeper: a listing carries no entry's own stat).
   */
  readonly fencingToken: bigint;
}

export interface Enqueued {
  readonly entry: Entry;
  /** The queue as it stood right after the entry was added, sorted by order. */
  readonly queue: readonly Entry[];
}

/**
 * What `Backend.enqueueAhead` answers: the new entry, a window of the entries just ahead of it, and
 * which movers (see `moverOf` in decide.ts) the queue holds, all read in the request that added it.
 */
export interface EnqueuedAhead {
  readonly entry: Entry;
  /** Entries ordered before the new one, nearest first; at most the `page` asked for. */
  readonly ahead: readonly Entry[];
  /** Whether entries ahead were left out of `ahead`. */
  readonly more: boolean;
  /**
   * How many entries are ahead of the new one (the queue's size less one): always where it comes at no
   * cost that grows with the queue, otherwise only when `AheadAsked.count` asked for it.
   */
  readonly position?: number;
  /** The movers that have an entry in the queue besides the new one: every such entry is ahead of it. */
  readonly movers: readonly Mover[];
}

/** What `Backend.enqueueAhead` is asked to answer with. */
export interface AheadAsked {
  /** How many of the entries just ahead, nearest first. */
  readonly page: number;
  /**
   * Whether `position` must be counted (a trace reports it): a backend that must read the whole queue
   * for that count (PostgreSQL) reads it only then.
   */
  readonly count: boolean;
}

/**
 * How a caller gives up an enqueue the backend has not sent yet (a backend may hold enqueues back
 * while a session has many in flight): called only if the enqueue must wait, it makes the signal that
 * aborts when the caller gives up (its signal, its timeout), disposed once the enqueue is sent or
 * given up; the backend stops listening to it then. A given-up enqueue rejects with the signal's
 * reason, nothing written. (A held-back enqueue of a session that ended fails when its turn comes.)
 */
export type GiveUp = () => { readonly signal: Abortable; dispose(): void };

/** What `Backend.listBefore` read: the entries just ahead of `self`, and whether `self` is there. */
export interface Ahead {
  /** Whether `self` (that incarnation of its key) still exists. */
  readonly present: boolean;
  /** Entries ordered before `self`, nearest first; at most the `limit` asked for. */
  readonly entries: readonly Entry[];
  /** Whether entries ahead were left out (the limit was reached): false once the head was read. */
  readonly more: boolean;
}

/**
 * What a backend's waits use of a cancellation signal. An AbortSignal is one; so is a recipe's
 * deadline (deadline.ts), which is cheaper to make than an AbortController for every wait.
 */
export interface Abortable {
  readonly aborted: boolean;
  readonly reason: unknown;
  throwIfAborted(): void;
  addEventListener(type: 'abort', listener: () => void, options?: { once?: boolean }): void;
  removeEventListener(type: 'abort', listener: () => void): void;
}

export interface Backend {
  /**
   * The peer clients whose entry names this backend can write (the recipes' `interop` option, e.g.
   * `curator`, `kazoo`); empty where every peer reads baton's entries as they are.
   */
  readonly dialects: readonly string[];
  /**
   * Append an entry tied to this session; safe against a lost reply (never two entries). With `at`
   * (an entry of ours in the same queue) the new entry takes the same place in the order instead of
   * the tail: a downgrade keeps its place ahead of everyone who queued after the write lock. `data`
   * is stored with the entry, readable by any session (an election candidate's id). `dialect` (one of
   * `dialects`) names the entry as that peer does, so that the peer sees it. `giveUp`: see `GiveUp`.
   */
  enqueue(queue: string, kind: string, at?: Entry, data?: string, dialect?: string, giveUp?: GiveUp): Promise<Enqueued>;
  /**
   * Optional, with `listBefore`: `enqueue` at the tail, answered with only the `asked.page` entries
   * just ahead of the new one, the queue's size (see `EnqueuedAhead.position`) and which movers it
   * holds, so that the answer does not grow with the queue. Whatever the page leaves undecided the
   * waiting loop lists.
   */
  enqueueAhead?(
    queue: string,
    kind: string,
    asked: AheadAsked,
    data?: string,
    dialect?: string,
    giveUp?: GiveUp,
  ): Promise<EnqueuedAhead>;
  /** The data an entry was created with (`''` if none), or null once that entry is gone. */
  read(entry: Entry): Promise<string | null>;
  /**
   * A fresh snapshot of the queue, sorted by order. With `through` (an entry of this session in that
   * queue) a backend may leave out the entries ordered after it: nothing queued behind an entry changes
   * what that entry waits for, and a waiter woken at the head of a long queue need not read the rest.
   */
  list(queue: string, through?: Entry): Promise<readonly Entry[]>;
  /**
   * Optional: only the entries just ahead of `self` (an entry of this session), read in one request
   * whose answer does not grow with the queue behind `self`: up to `limit` of them (all of them when
   * `limit` is undefined), nearest first, with whether `self` still exists in the same read (a session
   * the server closed deletes our entry and our blocker at once). A backend may leave out an entry
   * placed `at` another one after `self` was enqueued (etcd reads in create-revision order, and such an
   * entry was created after `self`): the waiting loop uses this only where no such entry can matter
   * (see `Lookahead` in decide.ts), a choice it makes from the enqueue's answer: a backend with this
   * method answers an enqueue with the whole queue ahead of the new entry, or has `enqueueAhead`.
   * Backends without it are listed whole.
   */
  listBefore?(queue: string, self: Entry, limit?: number): Promise<Ahead>;
  /** Resolves once `entry` is deleted (at once if it already is); rejects with `signal.reason`. */
  waitGone(entry: Entry, signal: Abortable): Promise<void>;
  /**
   * Resolves once the queue's entries differ from `seen` (an earlier listing of it), at once if they
   * already do; rejects with `signal.reason`. It may also resolve when nothing changed (after a
   * reconnect, or when a foreign key came and went): callers list again and decide. Used where nobody
   * holds an entry to watch: an observer of an empty election.
   */
  waitChange(queue: string, seen: readonly Entry[], signal: Abortable): Promise<void>;
  /** Deletes our own entry: retried until done or the session is gone; idempotent. */
  withdraw(entry: Entry): Promise<void>;
  /** Does the entry still exist and belong to this session? */
  confirm(entry: Entry): Promise<boolean>;
  /**
   * An operator's force release: deletes `entry`, any session's (as a listing or `describe` gave it),
   * in one request, and wakes its watchers as any delete does. True if it was deleted, false if it was
   * already gone. Not retried past the session's end; never touches another queue's entries.
   */
  revoke(entry: Entry): Promise<boolean>;
  /**
   * Applies `op` to the values kept next to `entry`'s lock (see `GuardedOp`) in one atomic step on the
   * server, and only if `entry`, ours, still exists there: true if applied, false if the entry was gone
   * (nothing written). The values live beside the queue, never where a listing of it would see them.
   */
  guardedWrite(entry: Entry, op: GuardedOp): Promise<boolean>;
  /** The value kept under `name` next to the lock `queue`, or null: a plain read, guarded by nothing. */
  guardedRead(queue: string, name: string): Promise<string | null>;
  /**
   * SQL backends only: runs `work` on `client` (the user's connection to the lock's database) in a
   * transaction that commits only if `entry` is still held at COMMIT, and while it is open no other
   * holder can be granted. Rejects with `LockLostError` (`what` names the lock), rolled back, otherwise.
   */
  guardedTransaction?<T>(
    entry: Entry,
    client: GuardedClient,
    work: (client: GuardedClient) => Promise<T>,
    options: { readonly limitMs: number | undefined; readonly signal: Abortable },
    what: string,
  ): Promise<T>;
}

/**
 * A single database connection that runs statements: a `pg.Client`, or a client from `pool.connect()`
 * (not the pool itself, which would run each statement of a transaction on any of its connections).
 */
export interface GuardedClient {
  /** Runs one statement (`$1`, `$2` ... bound to `values`) and resolves with its rows. */
  query(text: string, values?: unknown[]): Promise<{ readonly rows: unknown[] }>;
}

/** A write of a value kept next to a lock: `value` put under `name`, or `name` deleted. */
export type GuardedOp =
  | { readonly type: 'put'; readonly name: string; readonly value: string }
  | { readonly type: 'delete'; readonly name: string };

/** What the session keeps for every granted entry, so that loss and close reach the holder. */
export interface Hold {
  readonly entry: Entry;
  /** Ownership is in doubt: abort the holder's signal with this reason. */
  lose(reason: Error): void;
  /** Give the entry back (used by `close()`). */
  release(): Promise<void>;
  /** The holder is giving the entry back: its absence on the server is then no loss. */
  readonly releasing: boolean;
}

/** What the session keeps for every entry still waiting its turn, so that a reconnect confirms it too. */
export interface Waiting {
  readonly entry: Entry;
  /** The entry is gone from the server while the session lives (someone deleted it). */
  vanished(): void;
  /**
   * The session ended (lost or closed), with its signal's reason: the wait stops. Told directly, not
   * through a listener on the session's signal, which costs more for every wait than the wait's
   * other bookkeeping.
   */
  ended(reason: Error): void;
}

/** What a waiter does when its entry vanished while its session lives: queue again at the tail, or fail. */
export type WaiterLostPolicy = 'requeue' | 'fail';

/** A listener of the session's `'state'` event: the new state and the one before it. */
export type StateListener = (state: SessionState, previous: SessionState) => void;

/**
 * A znode or key in a queue that baton did not create (by an operator, another tool, a tenant without
 * ACLs): ignored by the ordering, reported once per session and key.
 */
export interface ForeignKey {
  /** The lock name whose queue holds the key. */
  readonly queue: string;
  /** The full znode path or etcd key. */
  readonly key: string;
}

/**
 * A connection to one backend (a ZooKeeper session, an etcd lease, a memory session), opened by
 * `connect()`. Every lock, read/write lock and election is made on a session, and lives no longer:
 * when the session is lost or closed, every holder's signal aborts and every waiter gives up.
 */
export interface Session {
  /**
   * The server's id of the session: ZooKeeper's session id in hex, etcd's lease id, the session row's or
   * key's id on PostgreSQL and Redis, a number on memory.
   */
  readonly id: string;
  /**
   * `connected`; `suspended` while the connection is down but the session may live (holders keep their
   * locks until the deadline, unless `onSuspend: 'abort'`); `lost` (expired, or the deadline passed);
   * `closed` by `close()`. `lost` and `closed` are final.
   */
  readonly state: SessionState;
  /**
   * The session timeout the server granted, in ms: ZooKeeper's negotiated timeout (clamped by the
   * server), etcd's lease TTL; `Infinity` on memory. The server keeps the session this long after it
   * last heard from the client.
   */
  readonly timeoutMs: number;
  /** Aborts when the session is lost or closed; its reason is a `SessionLostError` or `ClosedError`. */
  readonly signal: AbortSignal;
  /** Every change of `state`, with the previous state. */
  on(event: 'state', listener: StateListener): this;
  /**
   * With `reconnectAfterLoss`, after this session was lost: the new session that replaces it. Locks
   * must be taken again on it; nothing moves by itself.
   */
  on(event: 'replaced', listener: (next: Session) => void): this;
  /**
   * What the locks, read/write locks and elections on this session do (a `LockEvent`: requested, then
   * granted, busy, timedOut, aborted or failed; a grant then released or lost). Free while nobody listens.
   */
  on(event: 'lock', listener: LockListener): this;
  /** A znode or key in a queue that baton did not create, once per key (see `ForeignKey`). */
  on(event: 'foreign', listener: (found: ForeignKey) => void): this;
  /** Removes a `'state'` listener added with `on()`. */
  off(event: 'state', listener: StateListener): this;
  /** Removes a `'replaced'` listener added with `on()`. */
  off(event: 'replaced', listener: (next: Session) => void): this;
  /** Removes a `'lock'` listener added with `on()`; with none left, no event is built any more. */
  off(event: 'lock', listener: LockListener): this;
  /** Removes a `'foreign'` listener added with `on()`. */
  off(event: 'foreign', listener: (found: ForeignKey) => void): this;
  /**
   * Closes the session in order: waiters give up (their acquires reject with `ClosedError`), held
   * locks are released (their signals abort with `LockLostError`), then the server session ends.
   * Idempotent: every call returns the same promise.
   */
  close(): Promise<void>;
}

/** One queue entry as the server describes it (what `participants()` and `baton inspect` show). */
export interface DescribedEntry {
  readonly entry: Entry;
  /**
   * The session that owns it: ZooKeeper session id in hex, etcd lease id, PostgreSQL and Redis session
   * id, memory session name.
   */
  readonly owner: string;
  /**
   * Which client's naming the entry has: `baton`, `curator` (Curator's names, which baton also writes
   * by default on ZooKeeper), `kazoo`, `baton-0.1` (names baton 0.1 wrote) or `etcd-go` (etcd's Go recipes).
   */
  readonly client: string;
  /** When the server created it (ms since the epoch), where the server keeps that (etcd does not). */
  readonly createdAt?: number;
  /** How long the owner's lease lives if it is not kept alive any more, where the server says. */
  readonly expiresInMs?: number;
  /** What the entry was created with (an election candidate's id); `''` if nothing. */
  readonly data: string;
}

/**
 * What the recipes reach of a session beyond its public face. Kept in a module-private map,
 * not on the session object, so that it appears neither in the shipped types nor in autocomplete.
 */
export interface SessionCore {
  /** The backend the recipes talk to. */
  readonly backend: Backend;
  /** What a waiter does when its entry vanished (the `onWaiterLost` option of connect). */
  readonly onWaiterLost: WaiterLostPolicy;
  /** Whether anyone listens for lock events: when not, recipes build none and read no clock for them. */
  readonly reporting: boolean;
  /** Starts an operation that `close()` waits for; throws if the session cannot take work. */
  enter(): () => void;
  /** Registers a granted entry; the returned function unregisters it. */
  hold(hold: Hold): () => void;
  /**
   * Declares the session lost at once if its deadline has passed, without waiting for the deadline
   * timer (late on a stalled event loop).
   */
  checkDeadline(): void;
  /** Registers a waiting entry; the returned function unregisters it. The session must not have ended. */
  waiting(waiting: Waiting): () => void;
  /** What the server says about each entry of a queue, in queue order (`participants()`). */
  describe(queue: string): Promise<readonly DescribedEntry[]>;
  /** Tells the `'lock'` listeners; never throws into the recipe. */
  report(event: LockEvent): void;
}

const cores = new WeakMap<object, SessionCore>();

/** Called once by the session's constructor: what `coreOf` returns for it. */
export function bindCore(session: Session, core: SessionCore): void {
  cores.set(session, core);
}

/** The recipes' view of a session; throws `TypeError` for anything `connect()` did not make. */
export function coreOf(session: Session): SessionCore {
  const core = cores.get(session);
  if (core === undefined) throw new TypeError('not a session from connect()');
  return core;
}

/** Whether `value` is a session made by `connect()`. */
export function isSession(value: unknown): value is Session {
  return typeof value === 'object' && value !== null && cores.has(value);
}

/**
 * `promise`, or a rejection with `signal.reason` as soon as the signal aborts: a wait that begins with
 * a request (retried while the server is unreachable) can still be given up at once. The request
 * itself goes on and settles unobserved.
 */
export function untilAborted<T>(promise: Promise<T>, signal: Abortable): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => undefined);
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

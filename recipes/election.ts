import { coreOf, type Entry, type Session, type SessionCore, untilAborted } from './contract.js';
import { deadline } from './deadline.js';
import { exclusive, exclusiveLookahead } from './decide.js';
import { InvalidArgumentError } from './errors.js';
import { LockHandle } from './handle.js';
import { limitHold } from './hold-limit.js';
import { ELECTION_INTEROP, type Interop, validateRecipeOptions } from './interop.js';
import { checkSession } from './mutex.js';
import { listParticipants, type Participant, type ParticipantsOptions } from './participants.js';
import { assertUsable, type QueueRequest, waitForTurn } from './queue.js';
import { checkOptionKeys, type HoldOptions, validateHoldOptions, validateName, validateSignal } from './validate.js';

export const MAX_ID_LENGTH = 1_024;

/** Options of `LeaderElection`. */
export interface ElectionOptions {
  /**
   * Required: what `leader()` and `observe()` report while this candidate leads (a host name, a worker
   * id): a non-empty string of at most 1 024 characters.
   */
  readonly id: string;
  /**
   * Whose entry names to write on ZooKeeper (see `Interop`): `'curator'` (default, LeaderLatch's),
   * `'curator-selector'` (LeaderSelector's) or `'kazoo'` (kazoo's Election); only on ZooKeeper.
   */
  readonly interop?: Interop | undefined;
}

/**
 * The kinds of entry that lead at the head of the queue: candidates (baton's, LeaderLatch's) and
 * `exclusive` entries (a peer's whose recipe cannot be told, such as etcd's Go Election). LeaderSelector
 * and kazoo's Election campaign with entries named as their locks': with those peers' names, a `lock`
 * entry leads too (and a lock held on the same name cannot be told from a candidate). Anything else at
 * the head (a lock, a read or write lock of the same name) means nobody leads.
 */
function leadingKinds(dialect: Interop | undefined): ReadonlySet<string> {
  return dialect === 'curator-selector' || dialect === 'kazoo' ? CANDIDATE_OR_LOCK : CANDIDATE;
}
const CANDIDATE: ReadonlySet<string> = new Set(['candidate', 'exclusive']);
const CANDIDATE_OR_LOCK: ReadonlySet<string> = new Set(['candidate', 'exclusive', 'lock']);

/**
 * Leadership won in an election: a lock whose holder other sessions can name. Its `signal` aborts with
 * `LockLostError` as soon as leadership can no longer be guaranteed; `resign()` hands over at once and
 * is idempotent.
 */
export class Leadership extends LockHandle {
  /** This candidate's id (the election's `id` option), as other sessions' `leader()` reports it. */
  readonly id: string;

  /** @internal Made by `campaign()` on election, never by users. */
  constructor(session: SessionCore, entry: Entry, what: string, id: string) {
    super(session, entry, what);
    this.id = id;
  }

  /**
   * Gives up leadership at once (the next candidate is elected): `release()` under its election name.
   * Idempotent; resolves once the server deleted the candidacy.
   */
  resign(): Promise<void> {
    return this.release();
  }
}

/**
 * Leader election: candidates queue fairly, the head of the queue leads, and each candidate watches
 * only the one ahead of it. Each candidate's id is stored with its entry, so that any session, also one
 * that is not campaigning, can ask who leads.
 */
export class LeaderElection {
  /** The election name, as validated (`scheduler/leader`). */
  readonly name: string;
  /** This candidate's id (the `id` option). */
  readonly id: string;
  readonly #session: Session;
  readonly #core: SessionCore;
  readonly #request: QueueRequest;
  readonly #leading: ReadonlySet<string>;

  /**
   * An election named `name` on `session`, for the candidate `options.id`; sends nothing to the server.
   * Throws `InvalidNameError` for a bad name, `InvalidArgumentError` for a missing or bad `id`, bad
   * options or a session that is not one from an awaited `connect()`, `ClosedError` or
   * `SessionLostError` for an ended session.
   */
  constructor(session: Session, name: string, options: ElectionOptions) {
    this.#session = checkSession(session);
    this.#core = coreOf(this.#session);
    this.name = validateName(name);
    // Unknown keys first: a misspelled id is named as such, not reported as a missing id.
    const dialect = validateRecipeOptions(options, this.#session, ELECTION_INTEROP, ['id', 'interop']);
    this.id = validateId(options);
    this.#leading = leadingKinds(dialect);
    this.#request = {
      session,
      core: this.#core,
      queue: this.name,
      kind: 'candidate',
      decide: exclusive,
      lookahead: exclusiveLookahead,
      what: `leadership of "${this.name}"`,
      data: this.id,
      dialect,
    };
  }

  /**
   * Queues as a candidate and resolves with the `Leadership` once elected (candidates are elected in
   * the order they queued). Gives up, withdrawing the candidacy, as a lock's `acquire` does: rejects
   * with `LockTimeoutError`, `signal.reason`, `SessionLostError` or `ClosedError`, and
   * `InvalidArgumentError` for bad options. Waits without a limit by default. With `maxHoldMs` the
   * leadership ends by itself once it lasted that long: its signal aborts with `HoldLimitError` and the
   * candidacy is withdrawn (the next candidate is elected).
   */
  async campaign(options?: HoldOptions): Promise<Leadership> {
    const checked = validateHoldOptions(options);
    const entry = await waitForTurn(this.#request, checked);
    const { what } = this.#request;
    return new Leadership(limitHold(this.#core, checked.maxHoldMs, what), entry, what, this.id);
  }

  /**
   * The candidates as the server has them now, in queue order (the leader first, as `holder`), baton's
   * and peers' (Curator's LeaderLatch and LeaderSelector, kazoo's Election, etcd's Go Election), each with
   * its `id`. Rejects with `LockTimeoutError` after `timeoutMs`, `signal.reason` on abort, or the
   * session's or backend's error.
   */
  participants(options?: ParticipantsOptions): Promise<Participant[]> {
    return listParticipants(this.#session, this.#core, this.name, options);
  }

  /**
   * The id of the current leader (the id a peer client stored, for a peer's candidate), or null when
   * nobody campaigns. Works from any session, campaigning or not. Rejects with the backend's error.
   */
  async leader(): Promise<string | null> {
    return (await this.#current()).leader?.id ?? null;
  }

  /**
   * The leader now and at every change after: `{ id, fencingToken }`, or null while nobody leads. A new
   * term of the same id (it resigned and was elected again) is a change. Works from any session,
   * campaigning or not, and costs one watch: on the leader's entry, or on the queue while it is empty.
   * Ends by throwing `signal.reason` on abort, or the session's error when the session ends; `break`
   * out of the loop to stop quietly. Throws `InvalidArgumentError` for bad options, `ClosedError` or
   * `SessionLostError` if the session already ended.
   *
   * Every leadership that lasts until the observer has listed the queue again is seen, in order; one
   * that begins and ends between two listings (shorter than a round trip) may be passed over.
   */
  observe(options?: ObserveOptions): AsyncGenerator<Leader | null, void, undefined> {
    const signal = validateSignal(validateObserveOptions(options).signal);
    assertUsable(this.#session);
    signal?.throwIfAborted();
    return this.#observe(signal);
  }

  async *#observe(signal: AbortSignal | undefined): AsyncGenerator<Leader | null, void, undefined> {
    const { backend } = this.#core;
    let term: string | null | undefined;
    let queue: readonly Entry[] | undefined;
    for (;;) {
      // The caller's signal and the session's, listened to only between two yields: an observer the
      // caller drops without `return()` while it sits at a yield holds no listener on either.
      const stop = deadline(`observation of "${this.name}"`, undefined, [signal, this.#session.signal]);
      let change: { leader: Leader | null } | undefined;
      try {
        stop.signal.throwIfAborted();
        if (queue !== undefined) {
          // Entries only ever join at the tail: the leader changes when the head leaves, or when an empty queue fills.
          const head = queue[0];
          if (head === undefined) await backend.waitChange(this.name, queue, stop.signal);
          else await backend.waitGone(head, stop.signal);
        }
        // Given up at once on abort, even while the listing is stuck in an outage.
        const current = await untilAborted(this.#current(), stop.signal);
        queue = current.queue;
        const { leader } = current;
        // A term is one entry incarnation: etcd reuses a session's keys, so the token tells terms apart.
        const key = leader === null ? null : `${leader.entry.key}@${leader.entry.fencingToken}`;
        if (key !== term) {
          term = key;
          change = { leader: leader === null ? null : { id: leader.id, fencingToken: leader.entry.fencingToken } };
        }
      } finally {
        stop.dispose();
      }
      if (change !== undefined) yield change.leader;
    }
  }

  /** The queue and its leader (the head, if it is a candidate), read consistently with each other. */
  async #current(): Promise<{ queue: readonly Entry[]; leader: { entry: Entry; id: string } | null }> {
    for (;;) {
      const queue = await this.#core.backend.list(this.name);
      const head = queue[0];
      if (head === undefined || !this.#leading.has(head.kind)) return { queue, leader: null };
      const id = await this.#core.backend.read(head);
      if (id !== null) return { queue, leader: { entry: head, id } };
      // The leader left between the listing and the read: ask again.
    }
  }
}

/** What `observe()` reports: who leads, and the fencing token of its term. */
export interface Leader {
  /** The leader's id (its election's `id` option, or what a peer client stored). */
  readonly id: string;
  /** The fencing token of this term: the leader's `Leadership.fencingToken`. */
  readonly fencingToken: bigint;
}

/** Options of `LeaderElection.observe`. */
export interface ObserveOptions {
  /** Ends the observation: the loop throws `signal.reason`. */
  readonly signal?: AbortSignal | undefined;
}

function validateObserveOptions(options: unknown): ObserveOptions {
  if (options === undefined) return {};
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new InvalidArgumentError('options', options, 'an object such as { signal }');
  }
  checkOptionKeys(options, ['signal']);
  return options;
}

function validateId(options: unknown): string {
  if (typeof options !== 'object' || options === null)
    throw new InvalidArgumentError('options', options, 'an object such as { id: "worker-7" }');
  const { id } = options as Record<string, unknown>;
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH) {
    throw new InvalidArgumentError('id', id, `a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  }
  return id;
}

import type { Entry, Session } from './contract.js';
import { exclusive } from './decide.js';
import { InvalidArgumentError } from './errors.js';
import { LockHandle } from './handle.js';
import { checkSession } from './mutex.js';
import { waitForTurn, type QueueRequest } from './queue.js';
import { validateName, validateWaitOptions, type WaitOptions } from './validate.js';

export const MAX_ID_LENGTH = 1_024;

export interface ElectionOptions {
  /** What `leader()` reports while this candidate leads: a host name, a worker id. */
  readonly id: string;
}

/**
 * Leadership won in an election: a lock whose holder other sessions can name. Its `signal` aborts with
 * `LockLostError` as soon as leadership can no longer be guaranteed; `resign()` hands over at once and
 * is idempotent.
 */
export class Leadership extends LockHandle {
  readonly id: string;

  constructor(session: Session, entry: Entry, what: string, id: string) {
    super(session, entry, what);
    this.id = id;
  }

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
  readonly name: string;
  readonly id: string;
  readonly #session: Session;
  readonly #request: QueueRequest;

  constructor(session: Session, name: string, options: ElectionOptions) {
    this.#session = checkSession(session);
    this.name = validateName(name);
    this.id = validateId(options);
    this.#request = { session, queue: this.name, kind: 'candidate', decide: exclusive, what: `leadership of "${this.name}"`, data: this.id };
  }

  /** Resolves when elected; gives up (and withdraws the candidacy) on timeout, abort or session end. */
  async campaign(options?: WaitOptions): Promise<Leadership> {
    const entry = await waitForTurn(this.#request, validateWaitOptions(options));
    return new Leadership(this.#session, entry, this.#request.what, this.id);
  }

  /** The id of the current leader, or null when nobody campaigns. */
  async leader(): Promise<string | null> {
    for (;;) {
      const head = (await this.#session.backend.list(this.name))[0];
      // Another recipe's entry at the head (a lock on the same name) means nobody leads right now.
      if (head === undefined || head.kind !== 'candidate') return null;
      const id = await this.#session.backend.read(head);
      if (id !== null) return id;
      // The leader left between the listing and the read: ask again.
    }
  }
}

function validateId(options: unknown): string {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', options, 'an object such as { id: "worker-7" }');
  const { id } = options as Record<string, unknown>;
  if (typeof id !== 'string' || id.length === 0 || id.length > MAX_ID_LENGTH) {
    throw new InvalidArgumentError('id', id, `a non-empty string of at most ${MAX_ID_LENGTH} characters`);
  }
  return id;
}

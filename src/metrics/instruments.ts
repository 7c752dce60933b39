import type * as promClient from 'prom-client';
import type { Counter, Gauge, Histogram, Registry } from 'prom-client';

import type { SessionState } from '../../recipes/contract.js';
import type { LockEvent } from '../../recipes/events.js';

export type PromClient = typeof promClient;

/**
 * Lock waits run from a grant without contention (a fraction of a millisecond on memory, one round trip
 * on a server) to minutes behind a long holder; most interest lies between 1 ms and a few seconds.
 */
export const WAIT_BUCKETS: readonly number[] = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** Holds run from a short critical section to a leadership of hours. */
export const HOLD_BUCKETS: readonly number[] = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 900, 3_600];

const STATES: readonly SessionState[] = ['connected', 'suspended', 'lost', 'closed'];

export interface InstrumentSettings {
  readonly registry: Registry;
  readonly prefix: string;
  readonly waitBuckets: readonly number[];
  readonly holdBuckets: readonly number[];
  /** The `lock` label of a lock name (names may carry ids that would make one series each). */
  readonly lockLabel: (name: string) => string;
}

type LockLabels = 'lock' | 'kind';

/** The prom-client metrics, and what each lock event and session state does to them. */
export class Instruments {
  readonly #wait: Histogram<LockLabels>;
  readonly #hold: Histogram<LockLabels>;
  readonly #acquisitions: Counter<LockLabels>;
  readonly #timeouts: Counter<LockLabels>;
  readonly #losses: Counter<LockLabels>;
  readonly #heldTooLong: Counter<LockLabels>;
  readonly #waiting: Gauge<LockLabels>;
  readonly #state: Gauge<'session' | 'state'>;
  readonly #sessionLosses: Counter<'session'>;
  /** Each watched session's last state, so that only a change into `lost` counts as a loss. */
  readonly #lastState = new Map<string, SessionState>();
  readonly #lockLabel: (name: string) => string;

  constructor(prom: PromClient, settings: InstrumentSettings) {
    const { prefix, registry } = settings;
    const registers = [registry];
    const labelNames = ['lock', 'kind'] as const;
    this.#lockLabel = settings.lockLabel;
    this.#wait = new prom.Histogram({
      name: `${prefix}lock_wait_seconds`,
      help: 'Time from asking for a lock, read/write lock or leadership to getting it (granted waits only).',
      labelNames,
      buckets: [...settings.waitBuckets],
      registers,
    });
    this.#hold = new prom.Histogram({
      name: `${prefix}lock_hold_seconds`,
      help: 'Time from a grant to its release or loss.',
      labelNames,
      buckets: [...settings.holdBuckets],
      registers,
    });
    this.#acquisitions = new prom.Counter({
      name: `${prefix}lock_acquisitions_total`,
      help: 'Grants.',
      labelNames,
      registers,
    });
    this.#timeouts = new prom.Counter({
      name: `${prefix}lock_timeouts_total`,
      help: 'Waits that ran out of time.',
      labelNames,
      registers,
    });
    this.#losses = new prom.Counter({
      name: `${prefix}lock_losses_total`,
      help: 'Holds that ended while still held: session lost or closed, or the entry deleted by someone else.',
      labelNames,
      registers,
    });
    this.#heldTooLong = new prom.Counter({
      name: `${prefix}lock_held_too_long_total`,
      help: 'Holds that passed their holdWarningMs threshold while still held.',
      labelNames,
      registers,
    });
    this.#waiting = new prom.Gauge({
      name: `${prefix}lock_waiting`,
      help: 'Waits under way in this process (acquires, campaigns, permits asked for and not yet answered).',
      labelNames,
      registers,
    });
    this.#sessionLosses = new prom.Counter({
      name: `${prefix}session_losses_total`,
      help: 'Times a watched session became lost (expired, or its client-side deadline passed).',
      labelNames: ['session'] as const,
      registers,
    });
    this.#state = new prom.Gauge({
      name: `${prefix}session_state`,
      help: 'Session state: 1 for the state the session is in, 0 for the others.',
      labelNames: ['session', 'state'] as const,
      registers,
    });
  }

  record(event: LockEvent): void {
    const labels = { lock: this.#lockLabel(event.name), kind: event.kind };
    switch (event.type) {
      case 'requested':
        this.#waiting.inc(labels);
        return;
      case 'granted':
        this.#waiting.dec(labels);
        this.#acquisitions.inc(labels);
        this.#wait.observe(labels, event.waitMs / 1_000);
        return;
      case 'timedOut':
        this.#waiting.dec(labels);
        this.#timeouts.inc(labels);
        return;
      case 'busy':
      case 'aborted':
      case 'failed':
        this.#waiting.dec(labels);
        return;
      case 'heldTooLong':
        this.#heldTooLong.inc(labels);
        return;
      case 'lost':
        this.#losses.inc(labels);
        this.#hold.observe(labels, event.holdMs / 1_000);
        return;
      case 'released':
        this.#hold.observe(labels, event.holdMs / 1_000);
        return;
      case 'revoked':
        // The revoker's side: the holder's own session counts the loss.
        return;
    }
  }

  /** Every state gets a sample, so that a query for `state="lost"` finds a 0 rather than nothing. */
  state(session: string, current: SessionState): void {
    const previous = this.#lastState.get(session);
    this.#lastState.set(session, current);
    // A replacement session starts connected under the same label: the next loss counts again.
    if (current === 'lost' && previous !== undefined && previous !== 'lost') this.#sessionLosses.inc({ session });
    else if (previous === undefined) this.#sessionLosses.inc({ session }, 0);
    for (const state of STATES) this.#state.set({ session, state }, state === current ? 1 : 0);
  }

  /** Removes a session's state series (it is no longer watched). */
  forget(session: string): void {
    for (const state of STATES) this.#state.remove({ session, state });
    this.#lastState.delete(session);
  }
}

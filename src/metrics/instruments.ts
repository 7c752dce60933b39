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

/** A metric's name (after the prefix) and help text. */
interface Definition {
  readonly name: string;
  readonly help: string;
}

/** The two histograms of a lock's times, each with the setting that holds its buckets. */
const LOCK_HISTOGRAMS = {
  wait: {
    name: 'lock_wait_seconds',
    help: 'Time from asking for a lock, read/write lock or leadership to getting it (granted waits only).',
    buckets: 'waitBuckets',
  },
  hold: { name: 'lock_hold_seconds', help: 'Time from a grant to its release or loss.', buckets: 'holdBuckets' },
} as const satisfies Record<string, Definition & { buckets: keyof InstrumentSettings }>;

/** The counters of lock events. */
const LOCK_COUNTERS = {
  acquisitions: { name: 'lock_acquisitions_total', help: 'Grants.' },
  timeouts: { name: 'lock_timeouts_total', help: 'Waits that ran out of time.' },
  losses: {
    name: 'lock_losses_total',
    help: 'Holds that ended while still held: session lost or closed, or the entry deleted by someone else.',
  },
  heldTooLong: {
    name: 'lock_held_too_long_total',
    help: 'Holds that passed their holdWarningMs threshold while still held.',
  },
} as const satisfies Record<string, Definition>;

/** The lock-wait gauge and the session metrics, each with labels of its own. */
const OTHERS = {
  waiting: {
    name: 'lock_waiting',
    help: 'Waits under way in this process (acquires, campaigns, permits asked for and not yet answered).',
  },
  sessionLosses: {
    name: 'session_losses_total',
    help: 'Times a watched session became lost (expired, or its client-side deadline passed).',
  },
  sessionState: { name: 'session_state', help: 'Session state: 1 for the state the session is in, 0 for the others.' },
} as const satisfies Record<string, Definition>;

/** `make` applied to each definition of a table, under the same keys. */
function eachOf<K extends string, D, M>(table: Record<K, D>, make: (definition: D) => M): Record<K, M> {
  const made = Object.entries<D>(table).map(([key, definition]) => [key, make(definition)]);
  return Object.fromEntries(made) as Record<K, M>;
}

/** The prom-client metrics, and what each lock event and session state does to them. */
export class Instruments {
  readonly #times: Record<keyof typeof LOCK_HISTOGRAMS, Histogram<LockLabels>>;
  readonly #counts: Record<keyof typeof LOCK_COUNTERS, Counter<LockLabels>>;
  readonly #waiting: Gauge<LockLabels>;
  readonly #state: Gauge<'session' | 'state'>;
  readonly #sessionLosses: Counter<'session'>;
  /** Each watched session's last state, so that only a change into `lost` counts as a loss. */
  readonly #lastState = new Map<string, SessionState>();
  readonly #lockLabel: (name: string) => string;

  constructor(prom: PromClient, settings: InstrumentSettings) {
    const { prefix, registry } = settings;
    const named = ({ name, help }: Definition) => ({ name: `${prefix}${name}`, help, registers: [registry] });
    const labelNames = ['lock', 'kind'] as const;
    this.#lockLabel = settings.lockLabel;
    this.#times = eachOf(
      LOCK_HISTOGRAMS,
      (definition) =>
        new prom.Histogram({ ...named(definition), labelNames, buckets: [...settings[definition.buckets]] }),
    );
    this.#counts = eachOf(LOCK_COUNTERS, (definition) => new prom.Counter({ ...named(definition), labelNames }));
    this.#waiting = new prom.Gauge({ ...named(OTHERS.waiting), labelNames });
    this.#sessionLosses = new prom.Counter({ ...named(OTHERS.sessionLosses), labelNames: ['session'] as const });
    this.#state = new prom.Gauge({ ...named(OTHERS.sessionState), labelNames: ['session', 'state'] as const });
  }

  record(event: LockEvent): void {
    const labels = { lock: this.#lockLabel(event.name), kind: event.kind };
    switch (event.type) {
      case 'requested':
        this.#waiting.inc(labels);
        return;
      case 'granted':
        this.#waiting.dec(labels);
        this.#counts.acquisitions.inc(labels);
        this.#times.wait.observe(labels, event.waitMs / 1_000);
        return;
      case 'timedOut':
        this.#waiting.dec(labels);
        this.#counts.timeouts.inc(labels);
        return;
      case 'busy':
      case 'aborted':
      case 'failed':
        this.#waiting.dec(labels);
        return;
      case 'heldTooLong':
        this.#counts.heldTooLong.inc(labels);
        return;
      case 'lost':
        this.#counts.losses.inc(labels);
        this.#times.hold.observe(labels, event.holdMs / 1_000);
        return;
      case 'released':
        this.#times.hold.observe(labels, event.holdMs / 1_000);
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

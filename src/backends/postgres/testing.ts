/** PostgreSQL's part of `baton-locks/testing`: its counters and watches, and its sessions' probes. */
import type { Session } from '../../../recipes/contract.js';
import { InvalidArgumentError } from '../../../recipes/errors.js';
import type { TestKit } from '../backend.js';
import { postgresCounters as zeroPostgres, type PostgresProbe, type PostgresView } from '../probe.js';

/** What the PostgreSQL sessions of this process opened here counted (see `PostgresCounters`). */
export const postgresCounters = zeroPostgres();
/** Entries and queues the PostgreSQL sessions opened here wait on right now (`<namespace>/<queue>#<key>` or `<namespace>/<queue>`), with how many sessions wait on each. */
export const postgresWatches = new Map<string, number>();

/** A PostgreSQL session's probe: its driver's view. */
export interface PostgresSessionProbe {
  /** What the session's driver shows a test (its connections' server process ids). */
  readonly view: PostgresView;
}

type Made = PostgresProbe & PostgresSessionProbe;
const made = new WeakMap<object, Made>();

function newPostgresProbe(): Made {
  let view: PostgresView | undefined;
  return {
    counters: postgresCounters,
    watches: postgresWatches,
    expose: (shown) => (view = shown),
    get view() {
      if (view === undefined) throw new Error('the driver has not shown its view yet');
      return view;
    },
  };
}

/** The probe of a PostgreSQL session opened with this module's `connect`. */
export function postgresProbeOf(session: Session): PostgresSessionProbe {
  const probe = made.get(session);
  if (probe === undefined)
    throw new InvalidArgumentError(
      'session',
      session.id,
      "a PostgreSQL session opened with baton-locks/testing's connect",
    );
  return probe;
}

/** @internal What the PostgreSQL descriptor hands `baton-locks/testing`. */
export const postgresKit: TestKit = {
  newProbe: newPostgresProbe,
  opened: (session, probe) => made.set(session, probe as Made),
};

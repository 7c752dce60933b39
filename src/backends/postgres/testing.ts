/** PostgreSQL's part of `baton-locks/testing`: its counters and watches, and its sessions' probes. */
import type { Session } from '../../../recipes/contract.js';
import { sessionProbes } from '../test-kit.js';
import { postgresCounters as zeroPostgres, type PostgresProbe, type PostgresView } from './probe.js';

export type { PostgresCounters, PostgresView } from './probe.js';

/** What the PostgreSQL sessions of this process opened here counted (see `PostgresCounters`). */
export const postgresCounters = zeroPostgres();
/** Entries and queues the PostgreSQL sessions opened here wait on right now (`<namespace>/<queue>#<key>` or `<namespace>/<queue>`), with how many sessions wait on each. */
export const postgresWatches = new Map<string, number>();

/** A PostgreSQL session's probe: its driver's view. */
export interface PostgresSessionProbe {
  /** What the session's driver shows a test (its connections' server process ids). */
  readonly view: PostgresView;
}

const probes = sessionProbes<PostgresView, PostgresProbe & PostgresSessionProbe>('a PostgreSQL', () => ({
  counters: postgresCounters,
  watches: postgresWatches,
}));

/** The probe of a PostgreSQL session opened with this module's `connect`. */
export function postgresProbeOf(session: Session): PostgresSessionProbe {
  return probes.probeOf(session);
}

/** @internal What the PostgreSQL descriptor's `testing` loads (the default export: `export *` in test-kits.ts leaves it out). */
export default probes.kit;

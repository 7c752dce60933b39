/** MySQL's part of `baton-locks/testing`: its counters and watches, and its sessions' probes. */
import type { Session } from '../../../recipes/contract.js';
import { sessionProbes } from '../test-kit.js';
import { mysqlCounters as zeroMysql, type MysqlProbe, type MysqlView } from './probe.js';

export type { MysqlCounters, MysqlView } from './probe.js';

/** What the MySQL sessions of this process opened here counted (see `MysqlCounters`). */
export const mysqlCounters = zeroMysql();
/** Entries the MySQL sessions opened here wait on right now (`<namespace>/<queue>#<key>`), with how many sessions wait on each. */
export const mysqlWatches = new Map<string, number>();

/** A MySQL session's probe: its driver's view. */
export interface MysqlSessionProbe {
  /** What the session's driver shows a test (its connections' server ids). */
  readonly view: MysqlView;
}

const probes = sessionProbes<MysqlView, MysqlProbe & MysqlSessionProbe>('a MySQL', () => ({
  counters: mysqlCounters,
  watches: mysqlWatches,
}));

/** The probe of a MySQL session opened with this module's `connect`. */
export function mysqlProbeOf(session: Session): MysqlSessionProbe {
  return probes.probeOf(session);
}

/** @internal What the MySQL descriptor's `testing` loads (the default export: `export *` in test-kits.ts leaves it out). */
export default probes.kit;

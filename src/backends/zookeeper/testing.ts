/** ZooKeeper's part of `baton-locks/testing`: its counters, limits and hooks, and its sessions' probes. */
import type { Session } from '../../../recipes/contract.js';
import { sessionProbes } from '../test-kit.js';
import { type AfterLook, zkCounters as zeroZk, type ZkProbe, type ZkView } from './probe.js';

export type { AfterLook, ZkCounters, ZkView } from './probe.js';

/** What the ZooKeeper sessions of this process opened here counted (see `ZkCounters`). */
export const zkCounters = zeroZk();
/** ZooKeeper limits, lowered by tests: the sequence from which a queue directory is recycled (2^30 in production). */
export const zkLimits = { recycleFrom: 2 ** 30 };
/** Runs inside the driver's mkdirp, after its look for the deepest existing ancestor and before its creates. */
export const mkdirpHooks: { afterLook?: AfterLook | undefined } = {};

/** A ZooKeeper session's probe: its driver's view. */
export interface ZkSessionProbe {
  /** What the session's driver shows a test (quiet directories, connect time, orphan creation...). */
  readonly view: ZkView;
}

const probes = sessionProbes<ZkView, ZkProbe & ZkSessionProbe>('a ZooKeeper', () => ({
  counters: zkCounters,
  get recycleFrom() {
    return zkLimits.recycleFrom;
  },
  get afterMkdirpLook() {
    return mkdirpHooks.afterLook;
  },
}));

/** The probe of a ZooKeeper session opened with this module's `connect`. */
export function zkProbeOf(session: Session): ZkSessionProbe {
  return probes.probeOf(session);
}

/** @internal What the ZooKeeper descriptor's `testing` loads (the default export: `export *` in test-kits.ts leaves it out). */
export default probes.kit;

/** etcd's part of `baton-locks/testing`: its counters and watches, and its sessions' probes. */
import type { Session } from '../../../recipes/contract.js';
import { sessionProbes } from '../test-kit.js';
import { etcdCounters as zeroEtcd, type EtcdProbe, type EtcdView } from './probe.js';

export type { EtcdCounters, EtcdView } from './probe.js';

/** What the etcd sessions of this process opened here counted (see `EtcdCounters`). */
export const etcdCounters = zeroEtcd();
/** Keys and prefixes the etcd sessions opened here watch right now, with how many sessions watch each. */
export const etcdWatches = new Map<string, number>();

/** An etcd session's probe: its driver's view, and two fault hooks for this session alone. */
export interface EtcdSessionProbe {
  /** What the session's driver shows a test (watchers closing, the keepalive member...). */
  readonly view: EtcdView;
  /** Watch events are ignored, as if every watch stream of the session had gone silent. */
  muteWatchEvents: boolean;
  /** Runs between a change wait's listing and its watch (to compact in between); cleared by the caller. */
  beforePrefixWatch: (() => Promise<void>) | undefined;
}

const probes = sessionProbes<EtcdView, EtcdProbe & EtcdSessionProbe>('an etcd', () => ({
  counters: etcdCounters,
  watches: etcdWatches,
  muteWatchEvents: false,
  beforePrefixWatch: undefined,
}));

/** The probe of a etcd session opened with this module's `connect`. */
export function etcdProbeOf(session: Session): EtcdSessionProbe {
  return probes.probeOf(session);
}

/** @internal What the etcd descriptor's `testing` loads (the default export: `export *` in test-kits.ts leaves it out). */
export default probes.kit;

/** etcd's part of `baton-locks/testing`: its counters and watches, and its sessions' probes. */
import type { Session } from '../../../recipes/contract.js';
import { InvalidArgumentError } from '../../../recipes/errors.js';
import type { TestKit } from '../backend.js';
import { etcdCounters as zeroEtcd, type EtcdProbe, type EtcdView } from '../probe.js';

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

type Made = EtcdProbe & EtcdSessionProbe;
const made = new WeakMap<object, Made>();

function newEtcdProbe(): Made {
  let view: EtcdView | undefined;
  return {
    counters: etcdCounters,
    watches: etcdWatches,
    muteWatchEvents: false,
    beforePrefixWatch: undefined,
    expose: (shown) => (view = shown),
    get view() {
      if (view === undefined) throw new Error('the driver has not shown its view yet');
      return view;
    },
  };
}

/** The probe of an etcd session opened with this module's `connect`. */
export function etcdProbeOf(session: Session): EtcdSessionProbe {
  const probe = made.get(session);
  if (probe === undefined)
    throw new InvalidArgumentError('session', session.id, "an etcd session opened with baton-locks/testing's connect");
  return probe;
}

/** @internal What the etcd descriptor hands `baton-locks/testing`. */
export const etcdKit: TestKit = {
  newProbe: newEtcdProbe,
  opened: (session, probe) => made.set(session, probe as Made),
};

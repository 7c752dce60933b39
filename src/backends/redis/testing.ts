/** Redis's part of `baton-locks/testing`: its counters and watches, and its sessions' probes. */
import type { Session } from '../../../recipes/contract.js';
import { sessionProbes } from '../test-kit.js';
import { redisCounters as zeroRedis, type RedisProbe, type RedisView } from './probe.js';

export type { RedisCounters, RedisView } from './probe.js';

/** What the Redis sessions of this process opened here counted (see `RedisCounters`). */
export const redisCounters = zeroRedis();
/** Channels the Redis sessions opened here wait on right now, with how many sessions wait on each. */
export const redisWatches = new Map<string, number>();

/** A Redis session's probe: its driver's view, and a fault switch for this session alone. */
export interface RedisSessionProbe {
  /** What the session's driver shows a test, and the faults a test may cause in it. */
  readonly view: RedisView;
  /** Published notifications are ignored, as if each were lost (the backstop must wake the waiters). */
  muteNotifications: boolean;
}

const probes = sessionProbes<RedisView, RedisProbe & RedisSessionProbe>('a Redis', () => ({
  counters: redisCounters,
  watches: redisWatches,
  muteNotifications: false,
}));

/** The probe of a Redis session opened with this module's `connect`. */
export function redisProbeOf(session: Session): RedisSessionProbe {
  return probes.probeOf(session);
}

/** @internal What the Redis descriptor's `testing` loads (the default export: `export *` in test-kits.ts leaves it out). */
export default probes.kit;

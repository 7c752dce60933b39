/** Redis's part of `baton-locks/testing`: its counters and watches, and its sessions' probes. */
import type { Session } from '../../../recipes/contract.js';
import { InvalidArgumentError } from '../../../recipes/errors.js';
import type { TestKit } from '../backend.js';
import { redisCounters as zeroRedis, type RedisProbe, type RedisView } from '../probe.js';

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

type Made = RedisProbe & RedisSessionProbe;
const made = new WeakMap<object, Made>();

function newRedisProbe(): Made {
  let view: RedisView | undefined;
  return {
    counters: redisCounters,
    watches: redisWatches,
    muteNotifications: false,
    expose: (shown) => (view = shown),
    get view() {
      if (view === undefined) throw new Error('the driver has not shown its view yet');
      return view;
    },
  };
}

/** The probe of a Redis session opened with this module's `connect`. */
export function redisProbeOf(session: Session): RedisSessionProbe {
  const probe = made.get(session);
  if (probe === undefined)
    throw new InvalidArgumentError('session', session.id, "a Redis session opened with baton-locks/testing's connect");
  return probe;
}

/** @internal What the Redis descriptor hands `baton-locks/testing`. */
export const redisKit: TestKit = {
  newProbe: newRedisProbe,
  opened: (session, probe) => made.set(session, probe as Made),
};

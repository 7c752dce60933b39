/**
 * `baton-locks/testing`: powers for tests, never needed in production. Sessions opened with this
 * module's `connect` count into the counters below, obey the fault hooks, and show their driver's state
 * through `zkProbeOf` / `etcdProbeOf` / `postgresProbeOf` / `redisProbeOf`; sessions opened with the package's own `connect` have none of it.
 * `expireMemorySession` works on any memory session.
 */
import type { Session } from '../recipes/contract.js';
import { InvalidArgumentError } from '../recipes/errors.js';
import { MemoryDriver } from './backends/memory/driver.js';
import {
  type AfterLook,
  etcdCounters as zeroEtcd,
  type EtcdProbe,
  type EtcdView,
  postgresCounters as zeroPostgres,
  type PostgresProbe,
  type PostgresView,
  type Probes,
  redisCounters as zeroRedis,
  type RedisProbe,
  type RedisView,
  zkCounters as zeroZk,
  type ZkProbe,
  type ZkView,
} from './backends/probe.js';
import { type ConnectOptions, connectWith } from './connect.js';
import { internalsOf } from './session.js';

export type {
  EtcdCounters,
  EtcdView,
  PostgresCounters,
  PostgresView,
  RedisCounters,
  RedisView,
  ZkCounters,
  ZkView,
} from './backends/probe.js';
export type { AfterLook } from './backends/probe.js';

/** What the ZooKeeper sessions of this process opened here counted (see `ZkCounters`). */
export const zkCounters = zeroZk();
/** What the etcd sessions of this process opened here counted (see `EtcdCounters`). */
export const etcdCounters = zeroEtcd();
/** Keys and prefixes the etcd sessions opened here watch right now, with how many sessions watch each. */
export const etcdWatches = new Map<string, number>();

/** What the PostgreSQL sessions of this process opened here counted (see `PostgresCounters`). */
export const postgresCounters = zeroPostgres();
/** Entries and queues the PostgreSQL sessions opened here wait on right now (`<namespace>/<queue>#<key>` or `<namespace>/<queue>`), with how many sessions wait on each. */
export const postgresWatches = new Map<string, number>();
/** What the Redis sessions of this process opened here counted (see `RedisCounters`). */
export const redisCounters = zeroRedis();
/** Channels the Redis sessions opened here wait on right now, with how many sessions wait on each. */
export const redisWatches = new Map<string, number>();

/** ZooKeeper limits, lowered by tests: the sequence from which a queue directory is recycled (2^30 in production). */
export const zkLimits = { recycleFrom: 2 ** 30 };
/** Runs inside the driver's mkdirp, after its look for the deepest existing ancestor and before its creates. */
export const mkdirpHooks: { afterLook?: AfterLook | undefined } = {};

/** A ZooKeeper session's probe: its driver's view. */
export interface ZkSessionProbe {
  /** What the session's driver shows a test (quiet directories, connect time, orphan creation...). */
  readonly view: ZkView;
}

/** An etcd session's probe: its driver's view, and two fault hooks for this session alone. */
export interface EtcdSessionProbe {
  /** What the session's driver shows a test (watchers closing, the keepalive member...). */
  readonly view: EtcdView;
  /** Watch events are ignored, as if every watch stream of the session had gone silent. */
  muteWatchEvents: boolean;
  /** Runs between a change wait's listing and its watch (to compact in between); cleared by the caller. */
  beforePrefixWatch: (() => Promise<void>) | undefined;
}

/** A PostgreSQL session's probe: its driver's view. */
export interface PostgresSessionProbe {
  /** What the session's driver shows a test (its connections' server process ids). */
  readonly view: PostgresView;
}

const postgresProbes = new WeakMap<object, PostgresProbe & PostgresSessionProbe>();

function newPostgresProbe(): PostgresProbe & PostgresSessionProbe {
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

/** A Redis session's probe: its driver's view, and a fault switch for this session alone. */
export interface RedisSessionProbe {
  /** What the session's driver shows a test, and the faults a test may cause in it. */
  readonly view: RedisView;
  /** Published notifications are ignored, as if each were lost (the backstop must wake the waiters). */
  muteNotifications: boolean;
}

const redisProbes = new WeakMap<object, RedisProbe & RedisSessionProbe>();
const zkProbes = new WeakMap<object, ZkProbe & ZkSessionProbe>();
const etcdProbes = new WeakMap<object, EtcdProbe & EtcdSessionProbe>();

function newZkProbe(): ZkProbe & ZkSessionProbe {
  let view: ZkView | undefined;
  return {
    counters: zkCounters,
    get recycleFrom() {
      return zkLimits.recycleFrom;
    },
    get afterMkdirpLook() {
      return mkdirpHooks.afterLook;
    },
    expose: (shown) => (view = shown),
    get view() {
      if (view === undefined) throw new Error('the driver has not shown its view yet');
      return view;
    },
  };
}

function newEtcdProbe(): EtcdProbe & EtcdSessionProbe {
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

function newRedisProbe(): RedisProbe & RedisSessionProbe {
  let view: RedisView | undefined;
  const probe: RedisProbe & RedisSessionProbe = {
    counters: redisCounters,
    watches: redisWatches,
    muteNotifications: false,
    expose: (shown) => (view = shown),
    get view() {
      if (view === undefined) throw new Error('the driver has not shown its view yet');
      return view;
    },
  };
  redisMade.add(probe);
  return probe;
}

/** The probes made for Redis drivers (the PostgreSQL and Redis probes have the same members). */
const redisMade = new WeakSet<object>();

const probes: Probes = {
  zk: newZkProbe,
  etcd: newEtcdProbe,
  postgres: newPostgresProbe,
  redis: newRedisProbe,
  opened(session, probe) {
    if ('recycleFrom' in probe) zkProbes.set(session, probe as ZkProbe & ZkSessionProbe);
    else if ('muteWatchEvents' in probe) etcdProbes.set(session, probe as EtcdProbe & EtcdSessionProbe);
    else if (redisMade.has(probe)) redisProbes.set(session, probe as RedisProbe & RedisSessionProbe);
    else postgresProbes.set(session, probe as PostgresProbe & PostgresSessionProbe);
  },
};

/** The package's `connect`, with this module's counters, hooks and probes wired into the session. */
export function connect(url: string, options: ConnectOptions = {}): Promise<Session> {
  return connectWith(url, options, probes);
}

/** The probe of a ZooKeeper session opened with this module's `connect`. */
export function zkProbeOf(session: Session): ZkSessionProbe {
  const probe = zkProbes.get(session);
  if (probe === undefined)
    throw new InvalidArgumentError(
      'session',
      session.id,
      "a ZooKeeper session opened with baton-locks/testing's connect",
    );
  return probe;
}

/** The probe of an etcd session opened with this module's `connect`. */
export function etcdProbeOf(session: Session): EtcdSessionProbe {
  const probe = etcdProbes.get(session);
  if (probe === undefined)
    throw new InvalidArgumentError('session', session.id, "an etcd session opened with baton-locks/testing's connect");
  return probe;
}

/** The probe of a PostgreSQL session opened with this module's `connect`. */
export function postgresProbeOf(session: Session): PostgresSessionProbe {
  const probe = postgresProbes.get(session);
  if (probe === undefined)
    throw new InvalidArgumentError(
      'session',
      session.id,
      "a PostgreSQL session opened with baton-locks/testing's connect",
    );
  return probe;
}

/** The probe of a Redis session opened with this module's `connect`. */
export function redisProbeOf(session: Session): RedisSessionProbe {
  const probe = redisProbes.get(session);
  if (probe === undefined)
    throw new InvalidArgumentError('session', session.id, "a Redis session opened with baton-locks/testing's connect");
  return probe;
}

/** Ends a memory:// session from the "server" side, as an expiry or lease revoke would. */
export function expireMemorySession(session: Session): void {
  const driver = internalsOf(session).backend;
  if (!(driver instanceof MemoryDriver)) throw new InvalidArgumentError('session', session, 'a memory:// session');
  driver.expire();
}

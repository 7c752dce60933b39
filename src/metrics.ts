/**
 * `baton-locks/metrics`: Prometheus metrics of locks and sessions through prom-client, an optional peer
 * dependency (importing this module without it fails with a message saying to install it).
 *
 *   const metrics = new BatonMetrics();               // prom-client's default registry, names baton_*
 *   const unwatch = metrics.watch(session);           // several sessions may feed one instance
 */
import type { Registry } from 'prom-client';

import { isSession, type Session } from '../recipes/contract.js';
import { InvalidArgumentError } from '../recipes/errors.js';
import type { LockEvent } from '../recipes/events.js';
import { HOLD_BUCKETS, Instruments, type PromClient, WAIT_BUCKETS } from './metrics/instruments.js';
import { loadPeer } from './metrics/peer.js';

const prom: PromClient = await loadPeer('prom-client', 'baton-locks/metrics', () => import('prom-client'));

/** Options of `new BatonMetrics()`. */
export interface BatonMetricsOptions {
  /** Where the metrics are registered. Default: prom-client's default registry (`register`). */
  readonly registry?: Registry;
  /** Prepended to every metric name. Default `baton_`. */
  readonly prefix?: string;
  /** Upper bounds (seconds) of the wait histogram's buckets. Default: 0.5 ms to 60 s. */
  readonly waitBuckets?: readonly number[];
  /** Upper bounds (seconds) of the hold histogram's buckets. Default: 1 ms to 1 h. */
  readonly holdBuckets?: readonly number[];
  /**
   * The `lock` label of a lock name. Default: the name itself. Map names that carry ids
   * (`orders/8812` -> `orders`) so that each id does not make series of its own.
   */
  readonly lockLabel?: (name: string) => string;
}

/** Options of `BatonMetrics.watch`. */
export interface WatchOptions {
  /** The `session` label of the state gauge. Default: the session's id. */
  readonly name?: string;
}

/**
 * Histograms of wait and hold time, counters of acquisitions, timeouts and losses (labels `lock` and
 * `kind`), and a gauge of each watched session's state (labels `session` and `state`).
 */
export class BatonMetrics {
  /** Where the metrics are registered (the `registry` option, or prom-client's default registry). */
  readonly registry: Registry;
  readonly #instruments: Instruments;
  /** Sessions this instance listens to, directly or by following a replacement: each counted once. */
  readonly #watched = new WeakSet<Session>();

  /**
   * Registers the metrics in the registry. Throws `InvalidArgumentError` for bad options, and
   * prom-client's error if metrics of these names are registered there already (give another
   * `prefix` or `registry`).
   */
  constructor(options: BatonMetricsOptions = {}) {
    const checked = checkOptions(options);
    this.registry = checked.registry ?? prom.register;
    this.#instruments = new Instruments(prom, {
      registry: this.registry,
      prefix: checked.prefix ?? 'baton_',
      waitBuckets: checked.waitBuckets ?? WAIT_BUCKETS,
      holdBuckets: checked.holdBuckets ?? HOLD_BUCKETS,
      lockLabel: checked.lockLabel ?? ((name) => name),
    });
  }

  /**
   * Counts the session's locks and follows its state; with `reconnectAfterLoss`, also the sessions
   * that replace it, under the same `session` label. Returns the function that stops it and removes
   * the state series. Watching a session this instance already watches adds nothing. Throws
   * `InvalidArgumentError` for anything but a session from `connect()`, or bad options.
   */
  watch(session: Session, options: WatchOptions = {}): () => void {
    if (!isSession(session)) throw new InvalidArgumentError('session', session, 'a session from connect()');
    const label = checkWatchOptions(options).name ?? session.id;
    if (this.#watched.has(session)) return () => undefined;
    let detach = this.#follow(session, label, (next) => (detach = next));
    return () => {
      detach();
      detach = () => undefined;
      this.#instruments.forget(label);
    };
  }

  /** Listens to `session` until it is replaced, then to its successor; `moved` gets the new detach. */
  #follow(session: Session, label: string, moved: (detach: () => void) => void): () => void {
    this.#watched.add(session);
    const onLock = (event: LockEvent): void => this.#instruments.record(event);
    const onState = (state: Session['state']): void => this.#instruments.state(label, state);
    const onReplaced = (next: Session): void => {
      detach();
      // Watched already (the user watched it in their own 'replaced' listener): theirs stands.
      if (!this.#watched.has(next)) moved(this.#follow(next, label, moved));
    };
    const detach = (): void => {
      session.off('lock', onLock).off('state', onState).off('replaced', onReplaced);
      this.#watched.delete(session);
    };
    session.on('lock', onLock).on('state', onState).on('replaced', onReplaced);
    this.#instruments.state(label, session.state);
    return detach;
  }
}

function checkOptions(options: unknown): BatonMetricsOptions {
  if (typeof options !== 'object' || options === null)
    throw new InvalidArgumentError('metrics options', options, 'an object');
  const { prefix, lockLabel, waitBuckets, holdBuckets } = options as Record<string, unknown>;
  if (prefix !== undefined && (typeof prefix !== 'string' || !/^[a-zA-Z_:][a-zA-Z0-9_:]*$|^$/.test(prefix))) {
    throw new InvalidArgumentError('prefix', prefix, 'letters, digits, _ and : not starting with a digit');
  }
  if (lockLabel !== undefined && typeof lockLabel !== 'function')
    throw new InvalidArgumentError('lockLabel', lockLabel, 'a function');
  for (const [what, buckets] of [
    ['waitBuckets', waitBuckets],
    ['holdBuckets', holdBuckets],
  ] as const) {
    if (buckets !== undefined && !isBuckets(buckets))
      throw new InvalidArgumentError(what, buckets, 'a non-empty array of increasing positive numbers');
  }
  return options;
}

function isBuckets(value: unknown): boolean {
  return (
    Array.isArray(value) &&
    value.length > 0 &&
    value.every((bound, i) => typeof bound === 'number' && bound > 0 && (i === 0 || bound > value[i - 1]))
  );
}

function checkWatchOptions(options: unknown): WatchOptions {
  if (typeof options !== 'object' || options === null)
    throw new InvalidArgumentError('watch options', options, 'an object');
  const { name } = options as Record<string, unknown>;
  if (name !== undefined && (typeof name !== 'string' || name.length === 0))
    throw new InvalidArgumentError('name', name, 'a non-empty string');
  return options;
}

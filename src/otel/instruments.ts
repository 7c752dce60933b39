import type { Attributes, Counter, Histogram, Meter, UpDownCounter } from '@opentelemetry/api';

import type { HoldMessage, WaitMessage } from '../../recipes/trace.js';
import { metricAttributes, outcomeOf } from './attributes.js';

/**
 * The `baton-locks/metrics` lock metrics as OpenTelemetry instruments, fed by the same channels as the
 * spans: wait and hold durations (seconds), grants, timeouts, losses, too-long holds and waits under way.
 */
export class OtelInstruments {
  readonly #wait: Histogram;
  readonly #hold: Histogram;
  readonly #acquisitions: Counter;
  readonly #timeouts: Counter;
  readonly #losses: Counter;
  readonly #heldTooLong: Counter;
  readonly #waiting: UpDownCounter;
  /** Waits counted in `#waiting` and not yet ended: only those are taken back (at their end or at `stop()`). */
  readonly #underWay = new Map<WaitMessage, Attributes>();

  constructor(
    meter: Meter,
    private readonly lockLabel: (name: string) => string,
  ) {
    const seconds = { unit: 's' };
    this.#wait = meter.createHistogram('baton.lock.wait.duration', {
      ...seconds,
      description: 'Time from asking for a lock to getting it (granted waits only).',
    });
    this.#hold = meter.createHistogram('baton.lock.hold.duration', {
      ...seconds,
      description: 'Time from a grant to its release or loss.',
    });
    this.#acquisitions = meter.createCounter('baton.lock.acquisitions', { description: 'Grants.' });
    this.#timeouts = meter.createCounter('baton.lock.timeouts', { description: 'Waits that ran out of time.' });
    this.#losses = meter.createCounter('baton.lock.losses', { description: 'Holds that ended while still held.' });
    this.#heldTooLong = meter.createCounter('baton.lock.held_too_long', {
      description: 'Holds that passed their warning threshold.',
    });
    this.#waiting = meter.createUpDownCounter('baton.lock.waiting', {
      description: 'Waits under way in this process (acquires, campaigns, permits asked for and not yet answered).',
    });
  }

  waitStarted(message: WaitMessage): void {
    const attributes = metricAttributes(message, this.lockLabel);
    this.#underWay.set(message, attributes);
    this.#waiting.add(1, attributes);
  }

  waitEnded(message: WaitMessage): void {
    const attributes = metricAttributes(message, this.lockLabel);
    // A wait that began before the instrumentation was never counted as under way.
    const started = this.#underWay.get(message);
    if (started !== undefined) {
      this.#underWay.delete(message);
      this.#waiting.add(-1, started);
    }
    const outcome = outcomeOf(message);
    if (outcome === 'granted' && message.waitMs !== undefined) {
      this.#acquisitions.add(1, attributes);
      this.#wait.record(message.waitMs / 1_000, attributes);
    } else if (outcome === 'timedOut') this.#timeouts.add(1, attributes);
  }

  holdEnded(hold: HoldMessage, lost: boolean): void {
    const attributes = metricAttributes(hold.wait, this.lockLabel);
    this.#hold.record((hold.holdMs ?? 0) / 1_000, attributes);
    if (lost) this.#losses.add(1, attributes);
  }

  heldTooLong(hold: HoldMessage): void {
    this.#heldTooLong.add(1, metricAttributes(hold.wait, this.lockLabel));
  }

  /** Takes back the waits still under way: the instrumentation stops, and a stopped one reads zero. */
  stop(): void {
    for (const attributes of this.#underWay.values()) this.#waiting.add(-1, attributes);
    this.#underWay.clear();
  }
}

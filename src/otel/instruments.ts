import type { Counter, Histogram, Meter } from '@opentelemetry/api';

import type { HoldMessage, WaitMessage } from '../../recipes/trace.js';
import { metricAttributes, outcomeOf } from './attributes.js';

/**
 * The `baton-locks/metrics` metrics as OpenTelemetry instruments, fed by the same channels as the
 * spans: wait and hold durations (seconds), grants, timeouts, losses and too-long holds.
 */
export class OtelInstruments {
  readonly #wait: Histogram;
  readonly #hold: Histogram;
  readonly #acquisitions: Counter;
  readonly #timeouts: Counter;
  readonly #losses: Counter;
  readonly #heldTooLong: Counter;

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
  }

  waitEnded(message: WaitMessage): void {
    const attributes = metricAttributes(message, this.lockLabel);
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
}

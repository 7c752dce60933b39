import type { DriverEvents } from '../driver-port.js';

/** Reports each foreign key of a queue once per driver: the reports are for operators, not a stream. */
export class ForeignReporter {
  readonly #reported = new Set<string>();
  #events: DriverEvents | undefined;

  attach(events: DriverEvents): void {
    this.#events = events;
  }

  report(queue: string, keys: readonly string[]): void {
    for (const key of keys) {
      if (this.#reported.has(key)) continue;
      this.#reported.add(key);
      this.#events?.foreign(queue, key);
    }
  }
}

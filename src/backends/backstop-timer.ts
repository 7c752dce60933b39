/** What a backstop timer needs of its driver. */
export interface BackstopChecks {
  isOpen(): boolean;
  /** Whether nothing is waited for any more (the timer then stops until `ensure` is called again). */
  idle(): boolean;
  /** One look at everything waited for; a look still under way (retrying) is not started again. */
  check(): Promise<void>;
}

/**
 * The timer under a backend's backstop for notifications that never come (a lost notification, a
 * silent watch): while anything is waited for, every `everyMs`, one check of everything waited for.
 * It stops by itself when nothing is waited for or the session has ended.
 */
export class BackstopTimer {
  readonly #checks: BackstopChecks;
  readonly #everyMs: number;
  /** Running while anything is waited for. */
  #timer: NodeJS.Timeout | undefined;

  constructor(checks: BackstopChecks, everyMs: number) {
    this.#checks = checks;
    this.#everyMs = everyMs;
  }

  /** Starts the checks, unless they run already or the session has ended. */
  ensure(): void {
    if (this.#timer !== undefined || !this.#checks.isOpen()) return;
    let checking = false;
    this.#timer = setInterval(() => {
      if (!this.#checks.isOpen() || this.#checks.idle()) {
        this.stop();
        return;
      }
      if (checking) return; // the last check is still retrying (a server down)
      checking = true;
      this.#checks.check().then(
        () => (checking = false),
        () => (checking = false),
      );
    }, this.#everyMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

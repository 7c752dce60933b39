/**
 * The resources the demo protects, in the parent process. Each refuses a write whose fencing token is
 * not above the highest it accepted: a worker that lost its lock cannot write late, whatever it believes.
 */
export class Ledger {
  readonly settledBy = new Map<number, { worker: string; token: bigint }>();
  readonly refused: { worker: string; period: number; token: bigint; newest: bigint }[] = [];
  readonly violations: string[] = [];
  #newest = -1n;

  isSettled(period: number): boolean {
    return this.settledBy.has(period);
  }

  settle(period: number, worker: string, token: bigint): boolean {
    if (token <= this.#newest) {
      this.refused.push({ worker, period, token, newest: this.#newest });
      return false;
    }
    this.#newest = token;
    const earlier = this.settledBy.get(period);
    if (earlier !== undefined)
      this.violations.push(`period ${period} settled twice: by ${earlier.worker} and by ${worker}`);
    this.settledBy.set(period, { worker, token });
    return true;
  }
}

/** The shared configuration: a version number, written only with a newer fencing token. */
export class ConfigStore {
  version = 1;
  #newest = -1n;

  write(version: number, token: bigint): boolean {
    if (token <= this.#newest) return false;
    this.#newest = token;
    this.version = version;
    return true;
  }
}

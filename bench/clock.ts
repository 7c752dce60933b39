/**
 * Microseconds on CLOCK_MONOTONIC, the clock every process on the machine shares (Python's
 * `time.monotonic_ns()` reads the same one): grant and release times from several processes, Node
 * and Python alike, can be put on one line.
 */
export function nowUs(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

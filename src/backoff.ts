/** A short, growing pause between retries, so that a connection flapping fast cannot spin the CPU. */
export function backoff(attempt: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, Math.min(10 * 2 ** attempt, 250)));
}

/** `count` distinct fencing tokens, spread out so that most writers race with a higher and a lower one. */
export function uniqueTokens(count: number): bigint[] {
  return Array.from({ length: count }, (_, i) => 1_000_000_000_000n + BigInt(i) * 7n);
}

/** The tokens in a random order (Fisher-Yates). */
export function shuffled<T>(items: readonly T[]): T[] {
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i -= 1) {
    const j = Math.floor(Math.random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/**
 * The value of one sample in Prometheus text exposition format, or undefined if there is none with
 * exactly these labels.
 */
export function sample(text: string, name: string, labels: Readonly<Record<string, string>> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$/.exec(line);
    if (match === null || match[1] !== name) continue;
    const found = new Map(
      [...(match[2] ?? '').matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g)].map((pair) => [pair[1]!, pair[2]!]),
    );
    const wanted = Object.entries(labels);
    if (found.size === wanted.length && wanted.every(([key, value]) => found.get(key) === value))
      return Number(match[3]);
  }
  return undefined;
}

/** All `name` samples' label sets, for checking which series exist. */
export function series(text: string, name: string): string[] {
  return text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .map((line) => line.slice(name.length, line.lastIndexOf(' ')));
}

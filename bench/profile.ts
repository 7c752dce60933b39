import { readFileSync } from 'node:fs';

/**
 * `node .bench-build/bench/profile.js [--from <s>] <file.cpuprofile>...`: where the CPU time of one or more
 * `node --cpu-prof` profiles went, by layer (node-zookeeper-client, etcd3/gRPC, baton's backends, the
 * recipes, Node itself) and by function, leaving out idle time and module loading (and, with `--from`,
 * everything in the first seconds of each profile: a worker's start-up). Native frames (a
 * socket write, the garbage collector) count for the nearest JavaScript caller's layer, marked `<-`.
 */
interface ProfileNode {
  readonly id: number;
  readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number };
  readonly children?: number[];
}
interface Profile {
  readonly nodes: ProfileNode[];
  readonly samples: number[];
  readonly timeDeltas: number[];
}

const STARTUP = new Set(['evaluate', 'Module._load', 'loadAndTranslate', 'compileForInternalLoader']);

function layer(url: string): string | undefined {
  if (url.includes('node-zookeeper-client') || url.includes('/async/')) return 'node-zookeeper-client';
  if (url.includes('etcd3') || url.includes('@grpc') || url.includes('protobufjs')) return 'etcd3 + gRPC';
  if (url.includes('/recipes/')) return 'baton recipes';
  if (url.includes('/src/')) return 'baton backends and session';
  if (url.includes('/bench/') || url.includes('/test/')) return 'benchmark';
  return undefined; // Node itself or native
}

function add(into: Map<string, number>, key: string, ms: number): void {
  into.set(key, (into.get(key) ?? 0) + ms);
}

function summarize(
  profile: Profile,
  fromMs: number,
  layers: Map<string, number>,
  functions: Map<string, number>,
): number {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);
  const stack = (id: number): ProfileNode[] => {
    const frames: ProfileNode[] = [];
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) frames.push(byId.get(at)!);
    return frames;
  };
  let total = 0;
  let at = 0;
  profile.samples.forEach((id, index) => {
    at += (profile.timeDeltas[index] ?? 0) / 1000;
    const ms = (profile.timeDeltas[index + 1] ?? 0) / 1000;
    if (at < fromMs) return;
    const frames = stack(id);
    const { functionName, url, lineNumber } = frames[0]!.callFrame;
    if (functionName === '(idle)' || frames.some((frame) => STARTUP.has(frame.callFrame.functionName))) return;
    const own = layer(url);
    const caller = own ?? frames.map((frame) => layer(frame.callFrame.url)).find((found) => found !== undefined);
    add(layers, own ?? `Node and native <- ${caller ?? 'event loop'}`, ms);
    add(functions, `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${lineNumber + 1}`, ms);
    total += ms;
  });
  return total;
}

function main(): void {
  const args = process.argv.slice(2);
  const from = args[0] === '--from' ? Number(args[1]) * 1000 : 0;
  const files = args[0] === '--from' ? args.slice(2) : args;
  if (files.length === 0 || Number.isNaN(from))
    throw new Error('usage: node profile.js [--from <seconds>] <file.cpuprofile>...');
  const layers = new Map<string, number>();
  const functions = new Map<string, number>();
  let total = 0;
  for (const file of files)
    total += summarize(JSON.parse(readFileSync(file, 'utf8')) as Profile, from, layers, functions);
  const print = (title: string, rows: Map<string, number>, count: number): void => {
    process.stdout.write(`${title}\n`);
    for (const [name, ms] of [...rows].sort((a, b) => b[1] - a[1]).slice(0, count)) {
      process.stdout.write(
        `${ms.toFixed(0).padStart(8)} ms ${((ms / total) * 100).toFixed(1).padStart(5)}%  ${name}\n`,
      );
    }
  };
  const skipped = from > 0 ? `, the first ${from / 1000} s of each` : '';
  process.stdout.write(
    `${files.length} profile(s), ${total.toFixed(0)} ms on the CPU (idle and module loading left out${skipped})\n`,
  );
  print('by layer:', layers, 20);
  print('by function (self time):', functions, 30);
}

main();

import { fourLetterWord } from '../test/harness/servers/four-letter.js';

/** What the benchmarks read from a ZooKeeper server's `mntr` counters. */
export interface ZkMetrics {
  /** Every packet the server received: requests, pings, connects, and each four-letter word. */
  readonly packetsReceived: number;
  /** Watches the server has fired, of every kind (data, exists and child watches). */
  readonly watchesFired: number;
  /** Watches set on the server right now. */
  readonly watchCount: number;
}

const FIRED = ['node_created', 'node_deleted', 'node_changed', 'node_children'].map(
  (kind) => `zk_sum_${kind}_watch_count`,
);

/** Reads `mntr` from the first server of a connect string (the benchmarks use a standalone one). */
export async function zkMetrics(connectString: string): Promise<ZkMetrics> {
  const [host, port] = connectString.split(',')[0]!.split(':') as [string, string];
  const values = new Map<string, number>();
  for (const line of (await fourLetterWord(Number(port), 'mntr', host)).split('\n')) {
    const [name, value] = line.split('\t');
    if (name !== undefined && value !== undefined) values.set(name, Number(value));
  }
  const read = (name: string): number => {
    const value = values.get(name);
    if (value === undefined || Number.isNaN(value)) throw new Error(`mntr from ${connectString} has no ${name}`);
    return value;
  };
  return {
    packetsReceived: read('zk_packets_received'),
    watchesFired: FIRED.reduce((sum, name) => sum + read(name), 0),
    watchCount: read('zk_watch_count'),
  };
}

/**
 * Requests the server received while `run` ran: the difference of `zk_packets_received`, less the one
 * packet that the second `mntr` itself counts as. Pings and heartbeats of every open session fall in
 * too; callers subtract them (`idleRate`) or run long enough that they do not matter.
 */
export async function zkRequestsDuring(connectString: string, run: () => Promise<unknown>): Promise<number> {
  const before = await zkMetrics(connectString);
  await run();
  const after = await zkMetrics(connectString);
  return after.packetsReceived - before.packetsReceived - 1;
}

/** Packets per second the server receives while every open session idles (pings, heartbeats). */
export async function idleRate(connectString: string, ms: number): Promise<number> {
  const started = performance.now();
  const packets = await zkRequestsDuring(connectString, () => new Promise((resolve) => setTimeout(resolve, ms)));
  return (packets / (performance.now() - started)) * 1000;
}

/** Polls `mntr` until at least `count` watches are set, so that a queue is known to be fully armed. */
export async function untilWatches(connectString: string, count: number, timeoutMs = 30_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while ((await zkMetrics(connectString)).watchCount < count) {
    if (performance.now() > deadline) throw new Error(`fewer than ${count} watches set after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

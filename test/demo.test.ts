import { describe, expect, inject, it } from 'vitest';
import { runDemo } from '../src/demo.js';

describe('the demo', () => {
  it.each([
    ['memory', () => 'memory://demo-test'],
    ['ZooKeeper', () => `zk://${inject('zkStandalone').connectString}/demo-test`],
    ['etcd', () => `etcd://${inject('etcdStandalone').endpoints[0]!.replace('http://', '')}/demo-test`],
  ])('settles every batch once, in token order, on %s', async (_name, url) => {
    let output = '';
    const result = await runDemo({ url: url(), workers: 3, rounds: 3, write: (line) => (output += line) });
    expect(result).toEqual({ batches: 9, refused: 0 });
    expect(output).toMatch(/ledger: 9 batches settled, 0 stale writes refused/);
    const tokens = [...output.matchAll(/token (\d+)/g)].map((m) => BigInt(m[1]!));
    expect(tokens).toHaveLength(9);
    for (let i = 1; i < tokens.length; i += 1) expect(tokens[i]! > tokens[i - 1]!).toBe(true);
  });
});

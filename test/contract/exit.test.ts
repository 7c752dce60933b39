import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, inject, it } from 'vitest';

const WORKER = fileURLToPath(new URL('../support/exit-worker.ts', import.meta.url));

/** Runs the worker and resolves with its exit code, or 'hung' if it is still alive after `limitMs`. */
function run(url: string, limitMs: number): Promise<number | 'hung'> {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, url], { stdio: ['ignore', 'pipe', 'inherit'] });
  let closedAt = 0;
  child.stdout.on('data', () => (closedAt ||= Date.now()));
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('hung');
    }, limitMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(closedAt === 0 ? -1 : (code ?? -1));
    });
  });
}

describe('a program that closes its session ends on its own (no socket, stream or timer left)', () => {
  it.each([
    ['ZooKeeper', () => `zk://${inject('zkStandalone').connectString}/exit-test`],
    ['etcd', () => `etcd://${inject('etcdStandalone').endpoints[0]!.replace('http://', '')}/exit-test`],
    ['memory', () => 'memory://exit-test'],
  ])('%s', async (_name, url) => {
    // Startup of a fresh Node with tsx takes a few seconds on a busy 2-core machine; a leak keeps it forever.
    expect(await run(url(), 30_000)).toBe(0);
  }, 40_000);
});

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';

import { describe, expect, inject, it } from 'vitest';

import { mysqlUrl } from '../harness/backends/mysql.js';
import { withParams } from '../harness/backends/postgres.js';
import { childScript } from '../harness/compiled.js';
import { TcpProxy } from '../harness/servers/proxy.js';

const WORKER = fileURLToPath(new URL('../harness/workers/exit-worker.ts', import.meta.url));

/** Each server backend with the URL of the harness's server (read once the run's servers are up). */
const SERVERS: readonly (readonly [string, () => string])[] = [
  ['ZooKeeper', () => `zk://${inject('zkStandalone').connectString}/exit-test`],
  ['etcd', () => `etcd://${inject('etcdStandalone').endpoints[0]!.replace('http://', '')}/exit-test`],
  ['PostgreSQL', () => withParams(inject('postgres'), { namespace: 'exit-test' })],
  ['Redis', () => `${inject('redisStandalone').url}?namespace=exit-test`],
  ['MySQL', () => `${mysqlUrl()}?namespace=exit-test`],
];

/** The worker's sessions use this TTL / session timeout (see exit-worker.ts). */
const TIMEOUT_MS = 2_000;

/**
 * Runs the worker and resolves with its exit code and how long it lived on after it closed its
 * session, or 'hung' if it is still alive after `limitMs`.
 */
function run(
  url: string,
  limitMs: number,
  scenario = 'cycles',
  onHeld?: () => void,
): Promise<{ code: number; afterCloseMs: number } | 'hung'> {
  const { script, execArgv } = childScript(WORKER);
  const child = spawn(process.execPath, [...execArgv, script, url, scenario], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let closedAt = 0;
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => {
    output += chunk.toString();
    if (output.includes('held\n') && onHeld !== undefined) {
      onHeld();
      onHeld = undefined;
    }
    if (output.includes('closed\n')) closedAt ||= performance.now();
  });
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve('hung');
    }, limitMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code: closedAt === 0 ? -1 : (code ?? -1), afterCloseMs: performance.now() - closedAt });
    });
  });
}

/**
 * Exits with 0, and within `withinMs` (default: a session timeout) of closing its session or of its
 * connect rejecting: nothing of the client lingers.
 */
async function expectPromptExit(
  url: string,
  scenario?: string,
  withinMs = TIMEOUT_MS,
  onHeld?: () => void,
): Promise<void> {
  // The tests run side by side (each mostly waits on its child): each in a namespace of its own.
  const own = url.replace('exit-test', `exit-${randomUUID().slice(0, 8)}`);
  // Startup of a fresh Node with tsx takes a few seconds on a busy 2-core machine; a leak keeps it forever.
  const outcome = await run(own, 30_000, scenario, onHeld);
  expect(outcome).not.toBe('hung');
  const { code, afterCloseMs } = outcome as { code: number; afterCloseMs: number };
  expect(code).toBe(0);
  expect(afterCloseMs, 'the process lingered after close()').toBeLessThan(withinMs);
}

describe.concurrent('a program that closes its session ends on its own (no socket, stream or timer left)', () => {
  it.each([...SERVERS, ['memory', () => 'memory://exit-test'] as const])(
    '%s',
    async (_name, url) => {
      await expectPromptExit(url());
    },
    40_000,
  );

  it.each([
    ['memory', () => 'memory://exit-test'],
    ['ZooKeeper', () => `zk://${inject('zkStandalone').connectString}/exit-test`],
    ['PostgreSQL', () => withParams(inject('postgres'), { namespace: 'exit-test' })],
    ['Redis', () => `${inject('redisStandalone').url}?namespace=exit-test`],
    ['MySQL', () => `${mysqlUrl()}?namespace=exit-test`],
  ])(
    '%s: a waiter keeps the process alive until its AbortSignal.timeout() gives it up',
    async (_name, url) => {
      await expectPromptExit(url(), 'waiting');
    },
    40_000,
  );

  // 224.0.0.1 is a multicast address (a TCP connect to it fails with ENETUNREACH); .invalid names never
  // resolve. The bound: the process ends within a second of the rejection.
  it.each([
    ['ZooKeeper, a refused port', 'zk://127.0.0.1:1/exit-test', 'failed-connect'],
    ['etcd, a refused port', 'etcd://127.0.0.1:1/exit-test', 'failed-connect'],
    ['ZooKeeper, a refused port by name', 'zk://localhost:1/exit-test', 'failed-connect'],
    ['etcd, a refused port by name', 'etcd://localhost:1/exit-test', 'failed-connect'],
    ['ZooKeeper, an unreachable address', 'zk://224.0.0.1:2181/exit-test', 'failed-connect'],
    ['etcd, an unreachable address', 'etcd://224.0.0.1:2379/exit-test', 'failed-connect'],
    ['ZooKeeper, a name that does not exist', 'zk://no-such-host.invalid:2181/exit-test', 'unknown-name'],
    ['etcd, a name that does not exist', 'etcd://no-such-host.invalid:2379/exit-test', 'unknown-name'],
    ['PostgreSQL, a refused port', 'postgres://baton@127.0.0.1:1/postgres?namespace=exit-test', 'failed-connect'],
    [
      'PostgreSQL, an unreachable address',
      'postgres://baton@224.0.0.1:5432/postgres?namespace=exit-test',
      'failed-connect',
    ],
    [
      'PostgreSQL, a name that does not exist',
      'postgres://baton@no-such-host.invalid:5432/postgres?namespace=exit-test',
      'unknown-name',
    ],
    ['Redis, a refused port', 'redis://127.0.0.1:1?namespace=exit-test', 'failed-connect'],
    ['Redis, a refused port by name', 'redis://localhost:1?namespace=exit-test', 'failed-connect'],
    ['Redis, an unreachable address', 'redis://224.0.0.1:6379?namespace=exit-test', 'failed-connect'],
    ['Redis, a name that does not exist', 'redis://no-such-host.invalid:6379?namespace=exit-test', 'unknown-name'],
    ['MySQL, a refused port', 'mysql://baton@127.0.0.1:1/baton?namespace=exit-test', 'failed-connect'],
    ['MySQL, an unreachable address', 'mysql://baton@224.0.0.1:3306/baton?namespace=exit-test', 'failed-connect'],
    [
      'MySQL, a name that does not exist',
      'mysql://baton@no-such-host.invalid:3306/baton?namespace=exit-test',
      'unknown-name',
    ],
  ])(
    '%s: a program whose connect failed ends on its own within a second',
    async (_name, url, scenario) => {
      await expectPromptExit(url, scenario, 1_000);
    },
    40_000,
  );

  // The server goes silent (a partition); the session's deadline passes and it is lost. Its user never
  // calls close(): a lost session has let go of its connections and timers by itself.
  it.each(SERVERS)(
    '%s: a session lost to a silent server ends the program on its own, without close()',
    async (_name, url) => {
      const direct = url();
      const address = /127\.0\.0\.1:(\d+)/.exec(direct);
      if (address === null) throw new Error(`no loopback address in ${direct}`);
      const proxy = await TcpProxy.start({ port: Number(address[1]) });
      try {
        await expectPromptExit(direct.replace(address[0], proxy.address), 'lost', TIMEOUT_MS, () => proxy.blackhole());
      } finally {
        await proxy.close();
      }
    },
    40_000,
  );

  it('etcd, closed while a watch is being created on a connection that is cut and refused', async () => {
    await expectPromptExit(
      `etcd://${inject('etcdStandalone').endpoints[0]!.replace('http://', '')}/exit-test`,
      'pending-watch',
    );
  }, 40_000);
});

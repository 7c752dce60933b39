import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { describe, expect, inject, it } from 'vitest';

import { BackendError, InvalidArgumentError } from '../../recipes/errors.js';
import { connect } from '../../src/connect.js';
import { parseUrl } from '../../src/url.js';
import { TcpProxy } from '../harness/servers/proxy.js';

describe('connect: URLs and options', () => {
  it.each([
    ['not a url'],
    ['http://127.0.0.1:2181'],
    ['zk://'],
    ['zk://127.0.0.1'],
    ['zk://127.0.0.1:0'],
    ['zk://127.0.0.1:70000'],
    ['zk://127.0.0.1:2181,/ns'],
    ['zk://user:secret@127.0.0.1:2181/ns'],
    ['zk://127.0.0.1:2181/bad name'],
    ['zk://127.0.0.1:2181/a/../b'],
    ['zk://[::1]:2181/ns'],
    ['memory://'],
    ['memory://a,b'],
    [''],
  ])('refuses %j with InvalidArgumentError before connecting', async (url) => {
    const error = await connect(url).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect((error as Error).message).not.toContain('secret');
  });

  it.each([
    [{ sessionTimeoutMs: -1 }],
    [{ sessionTimeoutMs: 1.5 }],
    [{ sessionTimeoutMs: Number.NaN }],
    [{ connectTimeoutMs: 0 }],
    [{ connectTimeoutMs: '100' }],
    [{ deadlineMarginMs: Infinity }],
    [{ onSuspend: 'maybe' }],
    [{ onWaiterLost: 'retry' }],
    [{ reconnectAfterLoss: 'yes' }],
    [null],
    ['fast'],
  ])('refuses options %j with InvalidArgumentError', async (options) => {
    await expect(connect('memory://opts', options as object)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('a memory session never times out: its timeoutMs is Infinity', async () => {
    const session = await connect('memory://timeout');
    expect(session.timeoutMs).toBe(Number.POSITIVE_INFINITY);
    await session.close();
  });

  it('parses hosts and namespaces, defaulting the namespace to baton', () => {
    expect(parseUrl('zk://127.0.0.1:2181,127.0.0.2:2182/my/app/')).toEqual({
      scheme: 'zk',
      hosts: ['127.0.0.1:2181', '127.0.0.2:2182'],
      namespace: 'my/app',
    });
    expect(parseUrl('zookeeper://localhost:2181').namespace).toBe('baton');
    expect(parseUrl('etcd://[::1]:2379').hosts).toEqual(['[::1]:2379']);
    expect(parseUrl('memory://test').hosts).toEqual(['test']);
  });

  it.each([[{ ttlSeconds: 0 }], [{ ttlSeconds: 1.5 }], [{ ttlSeconds: 100_000 }], [{ etcd: 'x' }]])(
    'refuses etcd options %j',
    async (options) => {
      await expect(connect('etcd://127.0.0.1:1/ns', options as object)).rejects.toBeInstanceOf(InvalidArgumentError);
    },
  );

  // 224.0.0.1 is a multicast address: a TCP connect to it fails at once with ENETUNREACH on Linux.
  // Names under .invalid never resolve (RFC 6761); localhost resolves from the hosts file.
  it.each([
    [
      'zk://127.0.0.1:1/ns',
      /could not connect to ZooKeeper at 127\.0\.0\.1:1 within 300 ms: connection refused \(connect ECONNREFUSED/,
    ],
    [
      'zk://localhost:1/ns',
      /could not connect to ZooKeeper at localhost:1 within \d+ ms: connection refused \(connect ECONNREFUSED/,
    ],
    [
      'zk://224.0.0.1:2181/ns',
      /could not connect to ZooKeeper at 224\.0\.0\.1:2181 within 300 ms: network unreachable \(connect ENETUNREACH/,
    ],
    [
      'etcd://127.0.0.1:1/ns',
      /could not open an etcd session at http:\/\/127\.0\.0\.1:1 within 300 ms: connection refused \(.*ECONNREFUSED/,
    ],
    [
      'etcd://localhost:1/ns',
      /could not open an etcd session at http:\/\/localhost:1 within \d+ ms: connection refused \(.*ECONNREFUSED/,
    ],
    [
      'etcd://224.0.0.1:2379/ns',
      /could not open an etcd session at http:\/\/224\.0\.0\.1:2379 within 300 ms: network unreachable \(.*ENETUNREACH/,
    ],
  ])('%s: the error says what happened', async (url, expected) => {
    const error = await connect(url, { connectTimeoutMs: 300 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect((error as Error).message).toMatch(expected);
    expect((error as Error).message).not.toContain('name resolution');
  });

  it.each([
    ['zk://no-such-host.invalid:2181/ns', 'ZooKeeper'],
    ['etcd://no-such-host.invalid:2379/ns', 'etcd'],
  ])('%s: a name that does not exist fails at once, not at the connect timeout, and says so', async (url, server) => {
    // A connect timeout far beyond the test's own: only the resolver's answer can end this connect in time.
    const error = await connect(url, { connectTimeoutMs: 600_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect((error as Error).message).toBe(
      `could not connect to ${server} at no-such-host.invalid:${url.split(':')[2]!.split('/')[0]}: the name no-such-host.invalid was not found (getaddrinfo ENOTFOUND no-such-host.invalid)`,
    );
    expect(((error as Error).cause as { code?: string }).code).toBe('ENOTFOUND');
  });

  it.each([
    [
      'zk',
      () => inject('zkStandalone').ports[0]!,
      (address: string) => `zk://${address}/ns`,
      /could not connect to ZooKeeper at 127\.0\.0\.1:\d+ within 500 ms: timed out: no answer within 500 ms$/,
    ],
    [
      'etcd',
      () => Number(new URL(inject('etcdStandalone').endpoints[0]!).port),
      (address: string) => `etcd://${address}/ns`,
      /could not open an etcd session at http:\/\/127\.0\.0\.1:\d+ within 500 ms: timed out: no answer within 500 ms$/,
    ],
  ] as const)(
    '%s: a server that takes the connection and never answers: the error says it timed out',
    async (_kind, port, url, expected) => {
      const proxy = await TcpProxy.start({ port: port() });
      try {
        proxy.blackhole();
        const error = await connect(url(proxy.address), { connectTimeoutMs: 500 }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(BackendError);
        expect((error as Error).message).toMatch(expected);
      } finally {
        await proxy.close();
      }
    },
  );

  it("loads a server's client only when a URL of that server is opened (gRPC is not loaded for memory or ZooKeeper)", async () => {
    const script = [
      "import { createRequire } from 'node:module';",
      "const { connect } = await import('./src/index.ts');",
      "const session = await connect('memory://lazy');",
      'await session.close();',
      'const loaded = Object.keys(createRequire(import.meta.url).cache);',
      "console.log(JSON.stringify({ grpc: loaded.some((p) => p.includes('@grpc')), zookeeper: loaded.some((p) => p.includes('node-zookeeper-client')) }));",
    ].join('\n');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { timeout: 20_000 },
    );
    expect(JSON.parse(stdout)).toEqual({ grpc: false, zookeeper: false });
  });
});

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../recipes/errors.js';
import { connect } from '../src/connect.js';
import { parseUrl } from '../src/url.js';

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
    expect(parseUrl('zookeeper://[::1]:2181').namespace).toBe('baton');
    expect(parseUrl('memory://test').hosts).toEqual(['test']);
  });

  it('fails with a clear error when no etcd answers', async () => {
    await expect(connect('etcd://127.0.0.1:1/ns', { connectTimeoutMs: 300 })).rejects.toThrow(/could not open an etcd session at http:\/\/127.0.0.1:1 within 300 ms/);
  });

  it.each([[{ ttlSeconds: 0 }], [{ ttlSeconds: 1.5 }], [{ ttlSeconds: 100_000 }], [{ etcd: 'x' }]])('refuses etcd options %j', async (options) => {
    await expect(connect('etcd://127.0.0.1:1/ns', options as object)).rejects.toBeInstanceOf(InvalidArgumentError);
  });

  it('fails with a clear error when no ZooKeeper answers', async () => {
    await expect(connect('zk://127.0.0.1:1/ns', { connectTimeoutMs: 300 })).rejects.toThrow(/could not connect to ZooKeeper at 127.0.0.1:1 within 300 ms/);
  });

  it("loads a server's client only when a URL of that server is opened (gRPC is not loaded for memory or ZooKeeper)", async () => {
    const script = [
      "import { createRequire } from 'node:module';",
      "const { connect } = await import('./src/index.ts');",
      "const session = await connect('memory://lazy');",
      'await session.close();',
      "const loaded = Object.keys(createRequire(import.meta.url).cache);",
      "console.log(JSON.stringify({ grpc: loaded.some((p) => p.includes('@grpc')), zookeeper: loaded.some((p) => p.includes('node-zookeeper-client')) }));",
    ].join('\n');
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { timeout: 20_000 });
    expect(JSON.parse(stdout)).toEqual({ grpc: false, zookeeper: false });
  });
});

import { describe, expect, inject, it } from 'vitest';

import { InvalidArgumentError } from '../../recipes/errors.js';
import { connect } from '../../src/connect.js';
import { TcpProxy } from '../harness/servers/proxy.js';
import { eventually } from '../harness/wait.js';

/** `connect(url, { signal })`: the one blocking call of the API that waits for a server before any session exists. */
describe('connect gives up on abort', () => {
  it('refuses a signal that is not an AbortSignal, before connecting', async () => {
    await expect(connect('memory://abort', { signal: 'stop' as unknown as AbortSignal })).rejects.toBeInstanceOf(
      InvalidArgumentError,
    );
  });

  it('an already aborted signal rejects with its reason (memory)', async () => {
    const reason = new Error('shutting down');
    await expect(connect('memory://abort', { signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
  });

  const servers = {
    zk: () => ({
      port: inject('zkStandalone').ports[0]!,
      url: (address: string) => `zk://${address}/abort`,
      options: { sessionTimeoutMs: inject('zkStandalone').sessionTimeoutMs },
    }),
    etcd: () => ({
      port: Number(new URL(inject('etcdStandalone').endpoints[0]!).port),
      url: (address: string) => `etcd://${address}/abort`,
      options: { ttlSeconds: inject('etcdStandalone').ttlSeconds },
    }),
    postgres: () => ({
      port: Number(new URL(inject('postgres')).port),
      url: (address: string) => {
        const url = new URL(inject('postgres'));
        url.host = address;
        url.searchParams.set('namespace', 'abort');
        return url.toString();
      },
      options: { sessionTimeoutMs: 2_000 },
    }),
    mysql: () => ({
      port: Number(new URL(inject('mysql')).port),
      url: (address: string) => {
        const url = new URL(inject('mysql'));
        url.host = address;
        url.searchParams.set('namespace', 'abort');
        return url.toString();
      },
      options: { sessionTimeoutMs: 2_000 },
    }),
  };

  it.each(['zk', 'etcd', 'postgres', 'mysql'] as const)(
    '%s: an abort while the server does not answer rejects with its reason at once (and the ZooKeeper client hangs up by its connect timeout)',
    async (kind) => {
      const server = servers[kind]();
      const proxy = await TcpProxy.start({ port: server.port });
      try {
        proxy.blackhole();
        const controller = new AbortController();
        // Any value may be a reason, not only an Error.
        const reason = 'shutting down';
        // On etcd, a connect timeout and request attempts (a third of the TTL) far beyond the test's own;
        // on ZooKeeper, a connect timeout that fails the connect with another error: only the abort can
        // end either connect in time with this reason.
        const connectTimeoutMs = kind === 'zk' ? 2 * inject('zkStandalone').sessionTimeoutMs : 600_000;
        // On PostgreSQL and MySQL, a lease whose statement deadlines (a third of it) are far beyond the test's own.
        const options =
          kind === 'etcd'
            ? { ttlSeconds: 300 }
            : kind === 'postgres' || kind === 'mysql'
              ? { sessionTimeoutMs: 600_000 }
              : server.options;
        const connecting = connect(server.url(proxy.address), {
          ...options,
          connectTimeoutMs,
          signal: controller.signal,
        });
        connecting.catch(() => undefined);
        await eventually('the client reached the server', () => proxy.connections > 0);
        controller.abort(reason);
        await expect(connecting).rejects.toBe(reason);
        // The ZooKeeper client is left to finish its attempt (tearing it down mid-dial is not safe in
        // node-zookeeper-client), and hangs up at its connect timeout. etcd3's gRPC connections live in
        // grpc-js's process-wide pool, shared by clients to the same member, closed on its own schedule.
        if (kind === 'zk') await eventually('the client hung up', () => proxy.connections === 0, 2 * connectTimeoutMs);
        // node-postgres's and mysql2's sockets are baton's own: dropped at the abort.
        if (kind === 'postgres' || kind === 'mysql')
          await eventually('the client hung up', () => proxy.connections === 0);
      } finally {
        await proxy.close();
      }
    },
  );

  it.each(['zk', 'etcd', 'postgres', 'mysql'] as const)(
    '%s: an already aborted signal rejects with its reason without dialling',
    async (kind) => {
      const server = servers[kind]();
      const proxy = await TcpProxy.start({ port: server.port });
      try {
        const reason = new Error('shutting down');
        await expect(
          connect(server.url(proxy.address), { ...server.options, signal: AbortSignal.abort(reason) }),
        ).rejects.toBe(reason);
        expect(proxy.bytesUp).toBe(0);
      } finally {
        await proxy.close();
      }
    },
  );

  it.each(['zk', 'etcd', 'postgres', 'mysql'] as const)(
    '%s: a signal that never aborts changes nothing, and the open session does not listen to it',
    async (kind) => {
      const server = servers[kind]();
      const controller = new AbortController();
      const session = await connect(server.url(`127.0.0.1:${server.port}`), {
        ...server.options,
        signal: controller.signal,
      });
      try {
        controller.abort(new Error('after the connect'));
        expect(session.state).toBe('connected');
        await (
          await import('../../recipes/mutex.js').then(({ FairMutex }) =>
            new FairMutex(session, `abort-${kind}`).acquire(),
          )
        ).release();
      } finally {
        await session.close();
      }
    },
  );
});

import net from 'node:net';

import { mysqlCounters, mysqlProbeOf } from 'baton-locks/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { FairMutex } from '../../../recipes/mutex.js';
import { lockNameOf } from '../../../src/backends/mysql/open.js';
import { mysqlFixture, mysqlUrl, withMysql } from '../../harness/backends/mysql.js';
import { useScope } from '../../harness/backends/scope.js';
import { entryOf } from '../../harness/internals.js';
import { listenOnLoopback } from '../../harness/servers/proxy.js';
import { eventually, track } from '../../harness/wait.js';

/**
 * A forwarder to the server that can cut one connection on the client's side only: the client sees
 * its connection end, the server sees nothing (its side stays open and silent), as after a partition.
 */
class Forwarder {
  readonly #pairs: { client: net.Socket; server: net.Socket }[] = [];
  #listener: net.Server | undefined;
  port = 0;

  async start(target: number): Promise<void> {
    const { server, port } = await listenOnLoopback((client) => {
      const upstream = net.connect({ host: '127.0.0.1', port: target });
      client.pipe(upstream);
      upstream.pipe(client);
      client.on('error', () => undefined);
      upstream.on('error', () => client.destroy());
      this.#pairs.push({ client, server: upstream });
    });
    this.#listener = server;
    this.port = port;
  }

  /** Cuts the client side of the connection whose server side has this local port; true if found. */
  sever(serverSidePort: number): boolean {
    const pair = this.#pairs.find((p) => p.server.localPort === serverSidePort);
    if (pair === undefined) return false;
    pair.client.unpipe(pair.server);
    pair.server.unpipe(pair.client);
    pair.server.pause();
    pair.client.destroy();
    return true;
  }

  close(): void {
    for (const pair of this.#pairs) {
      pair.client.destroy();
      pair.server.destroy();
    }
    this.#listener?.close();
  }
}

async function processHost(thread: number): Promise<string | undefined> {
  return withMysql(mysqlUrl(), async (connection) => {
    const [rows] = await connection.query('SELECT host FROM information_schema.processlist WHERE id = ?', [thread]);
    return (rows as { host: string }[])[0]?.host;
  });
}

async function holderOf(name: string): Promise<number | null> {
  return withMysql(mysqlUrl(), async (connection) => {
    const [rows] = await connection.query('SELECT IS_USED_LOCK(?) AS holder', [name]);
    const holder = (rows as { holder: number | string | null }[])[0]?.holder;
    return holder === null || holder === undefined ? null : Number(holder);
  });
}

describe('MySQL: the main connection made again while its old server thread lives', () => {
  const forwarder = new Forwarder();
  beforeAll(async () => forwarder.start(Number(new URL(mysqlUrl()).port)));
  afterAll(() => forwarder.close());
  const scope = useScope(() => {
    const fixture = mysqlFixture();
    return {
      ...fixture,
      url: (namespace: string) => {
        const url = new URL(fixture.url(namespace));
        url.port = String(forwarder.port);
        return url.toString();
      },
    };
  });

  it("kills the old thread, takes the entry's name again, and a waiter is woken by it", async () => {
    const [a, b] = [await scope.open(), await scope.open()];
    const held = await new FairMutex(a, 'rearm').acquire();
    const name = lockNameOf(new URL(mysqlUrl()).pathname.slice(1), entryOf(held).key);
    const old = mysqlProbeOf(a).view.mainThreadId()!;
    expect(await holderOf(name)).toBe(old);
    const host = await processHost(old);
    expect(forwarder.sever(Number(host!.split(':')[1]))).toBe(true);
    await eventually(
      "the name held by a's new main connection",
      async () => {
        const now = mysqlProbeOf(a).view.mainThreadId();
        return now !== undefined && now !== old && (await holderOf(name)) === now;
      },
      scope.fixture.lossDeadlineMs,
    );
    expect(await processHost(old)).toBeUndefined(); // the old thread was killed, not left to hold
    const waiting = track(new FairMutex(b, 'rearm').acquire({ timeoutMs: scope.fixture.lossDeadlineMs }));
    await eventually('the waiter blocks in GET_LOCK', () => mysqlProbeOf(b).view.waitThreadIds().length === 1);
    const before = { ...mysqlCounters };
    await held.release();
    await (await waiting.promise).release();
    expect(mysqlCounters.notifications - before.notifications).toBe(1);
    expect(mysqlCounters.backstopWakes - before.backstopWakes).toBe(0);
  });
});

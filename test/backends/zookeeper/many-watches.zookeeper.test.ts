import { randomUUID } from 'node:crypto';

import { connect } from 'baton-locks/testing';
import zookeeper from 'node-zookeeper-client';
import { describe, expect, inject, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { create, remove } from '../../../src/backends/zookeeper/client.js';
import { BULK_BATCH, openBulkClient, pipelined, removeAll } from '../../harness/backends/zk-bulk.js';
import { fourLetterWord } from '../../harness/servers/four-letter.js';
import { TcpProxy } from '../../harness/servers/proxy.js';
import { eventually, later } from '../../harness/wait.js';

/**
 * More watches than one SetWatches frame may carry: after a reconnect a session sets its watches again,
 * and the server refuses a frame over jute.maxbuffer (1 MB by default) by closing the connection.
 */
const LOCKS = 15_000;
/**
 * The server's largest session timeout (the harness allows 20 s): a session's heartbeat waits behind the
 * requests queued before it, and thousands of acquires on a loaded machine take seconds.
 */
const SESSION_TIMEOUT_MS = 20_000;
const BATCH = BULK_BATCH;

/** The watches the server holds (`wchs`: "Total watches:N"); a server too busy to answer counts none. */
async function watchCount(port: number): Promise<number> {
  const reply = await fourLetterWord(port, 'wchs', '127.0.0.1', SESSION_TIMEOUT_MS).catch(() => '');
  const match = /Total watches:\s*(\d+)/.exec(reply);
  return match === null ? 0 : Number(match[1]);
}

const PERSISTENT = zookeeper.CreateMode.PERSISTENT;
const EPHEMERAL_SEQUENTIAL = zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL;

describe('ZooKeeper: a session waiting on many locks across a dropped connection', () => {
  const info = inject('zkStandalone');

  it(`a session waiting on ${LOCKS} locks survives a dropped connection and every waiter is granted`, async () => {
    const namespace = `/many-${randomUUID().slice(0, 8)}`;
    const names = Array.from({ length: LOCKS }, (_, i) => `lock-${i}`);
    const raw = await openBulkClient(info.connectString, SESSION_TIMEOUT_MS);
    const proxy = await TcpProxy.start({ port: info.ports[0]! });
    let waiter: Session | undefined;
    try {
      // The holders: an entry in each lock's queue, in baton's own form, created by a plain client.
      await create(raw, namespace, PERSISTENT);
      await pipelined(raw, names, (name) => create(raw, `${namespace}/${name}`, PERSISTENT));
      const held = await pipelined(raw, names, (name) =>
        create(raw, `${namespace}/${name}/_c_${randomUUID()}-lock-`, EPHEMERAL_SEQUENTIAL),
      );

      waiter = await connect(`zk://${proxy.address}${namespace}`, { sessionTimeoutMs: SESSION_TIMEOUT_MS });
      const session = waiter;
      const states: string[] = [];
      session.on('state', (state) => states.push(state));
      // Queueing this many, and granting them, takes a few session timeouts at most.
      const budgetMs = SESSION_TIMEOUT_MS * 5;
      const waiting = [];
      for (let from = 0; from < LOCKS; from += BATCH) {
        for (const name of names.slice(from, from + BATCH))
          waiting.push(later(new FairMutex(session, name).acquire({ timeoutMs: budgetMs })));
        await eventually(
          'the batch watching its holders',
          async () => (await watchCount(info.ports[0]!)) >= from + BATCH,
          budgetMs,
        );
      }

      proxy.drop();
      await eventually('suspended', () => states.includes('suspended'), SESSION_TIMEOUT_MS);
      await eventually('connected again', () => session.state === 'connected', SESSION_TIMEOUT_MS);
      // The watches are set again on the new connection; a frame the server refuses ends it instead.
      await eventually(
        'watches set again',
        async () => (await watchCount(info.ports[0]!)) >= LOCKS,
        SESSION_TIMEOUT_MS,
      );

      await pipelined(raw, held, (path) => remove(raw, path));
      const granted = await Promise.all(waiting);
      expect(granted.filter((lock) => lock.held)).toHaveLength(LOCKS);
      expect(session.state).toBe('connected');
      expect(states).toEqual(['suspended', 'connected']);
      await Promise.all(granted.map((lock) => lock.release()));
    } finally {
      await waiter?.close();
      await proxy.close();
      await removeAll(raw, [...names.map((name) => `${namespace}/${name}`), namespace]);
      raw.close();
    }
  }, 240_000);
});

import { randomUUID } from 'node:crypto';

import { connect } from 'baton-locks/testing';
import zookeeper from 'node-zookeeper-client';
import { describe, expect, inject, it } from 'vitest';

import { FairMutex } from '../../../recipes/mutex.js';
import { create, getChildren } from '../../../src/backends/zookeeper/client.js';
import { ensureNode, openBulkClient, pipelined, removeAll } from '../../harness/backends/zk-bulk.js';

/**
 * Entries in one queue whose listing is over 1 MB (jute.maxbuffer's default, which ZooKeeper's Java
 * client also applies to the replies it reads): each name is some 60 bytes.
 */
const ENTRIES = 20_000;
const SESSION_TIMEOUT_MS = 20_000;

describe('ZooKeeper: a queue whose listing is larger than 1 MB', () => {
  const info = inject('zkStandalone');

  it(`a lock with ${ENTRIES} entries queued ahead is listed, waited on and granted`, async () => {
    const namespace = `/listing-${randomUUID().slice(0, 8)}`;
    const dir = `${namespace}/big`;
    const raw = await openBulkClient(info.connectString, SESSION_TIMEOUT_MS);
    const session = await connect(`zk://${info.connectString}${namespace}`, { sessionTimeoutMs: SESSION_TIMEOUT_MS });
    try {
      await ensureNode(raw, namespace);
      await ensureNode(raw, dir);
      const ahead = await pipelined(raw, Array.from({ length: ENTRIES }), () =>
        create(raw, `${dir}/_c_${randomUUID()}-lock-`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL),
      );
      const { children } = await getChildren(raw, dir);
      const replyBytes = children.reduce((sum, name) => sum + 4 + Buffer.byteLength(name), 0);
      expect(replyBytes).toBeGreaterThan(1_048_576);

      const mutex = new FairMutex(session, 'big');
      expect(await mutex.tryAcquire()).toBeNull();
      const waiting = mutex.acquire({ timeoutMs: SESSION_TIMEOUT_MS * 3 });
      await removeAll(raw, ahead);
      const lock = await waiting;
      expect(lock.held).toBe(true);
      await lock.release();
    } finally {
      await session.close();
      await removeAll(raw, [dir, namespace]);
      raw.close();
    }
  }, 120_000);
});

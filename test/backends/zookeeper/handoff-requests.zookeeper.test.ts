import { randomUUID } from 'node:crypto';

import { connect } from 'baton-locks/testing';
import { describe, expect, inject, it } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { queueLength } from '../../harness/internals.js';
import { zkRemoveTree } from '../../harness/servers/clean.js';
import { fourLetterWord } from '../../harness/servers/four-letter.js';
import { eventually } from '../../harness/wait.js';

/** Long enough that heartbeats are a sliver of the requests counted (one every 1.25 s while busy). */
const SESSION_TIMEOUT_MS = 20_000;
/** The waiters are spread over this many sessions, as a fleet's would be. */
const SESSIONS = 4;

/** Requests the server has read from all its clients (`mntr`'s zk_packets_received). */
async function packetsReceived(port: number): Promise<number> {
  const line = (await fourLetterWord(port, 'mntr')).split('\n').find((text) => text.startsWith('zk_packets_received'));
  return Number(line?.split('\t')[1]);
}

describe('ZooKeeper: the requests of a handoff do not grow with the queue', () => {
  const info = inject('zkStandalone');

  /** Requests per handoff while `waiters` queued on one lock go through it one after another. */
  async function requestsPerHandoff(url: string, waiters: number): Promise<number> {
    const sessions: Session[] = [];
    try {
      for (let i = 0; i <= SESSIONS; i += 1)
        sessions.push(await connect(url, { sessionTimeoutMs: SESSION_TIMEOUT_MS }));
      const [holder, ...others] = sessions as [Session, ...Session[]];
      const name = `chain-${waiters}`;
      const held = await new FairMutex(holder, name).acquire();
      const done: Promise<void>[] = [];
      for (let i = 0; i < waiters; i += 1) {
        const mutex = new FairMutex(others[i % SESSIONS]!, name);
        done.push(mutex.acquire({ timeoutMs: SESSION_TIMEOUT_MS * 6 }).then((lock) => lock.release()));
        if (i % 100 === 99)
          await eventually('queued', async () => (await queueLength(holder, name)) === i + 2, SESSION_TIMEOUT_MS);
      }
      await eventually('all queued', async () => (await queueLength(holder, name)) === waiters + 1, SESSION_TIMEOUT_MS);
      const before = await packetsReceived(info.ports[0]!);
      await held.release();
      await Promise.all(done);
      return ((await packetsReceived(info.ports[0]!)) - before) / waiters;
    } finally {
      await Promise.all(sessions.map((session) => session.close()));
    }
  }

  it('at 2,000 waiters as at 100', async () => {
    const namespace = `handoff-${randomUUID().slice(0, 8)}`;
    const url = `zk://${info.connectString}/${namespace}`;
    try {
      const small = await requestsPerHandoff(url, 100);
      const large = await requestsPerHandoff(url, 2_000);
      expect(large / small, `${large} requests per handoff at 2,000 waiters, ${small} at 100`).toBeLessThanOrEqual(
        1.05,
      );
    } finally {
      await zkRemoveTree(info.connectString, `/${namespace}`);
    }
  }, 300_000);
});

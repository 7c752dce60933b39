import { type ChildProcess, spawn } from 'node:child_process';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';

import { connect } from 'baton-locks/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { FairMutex } from '../../../recipes/mutex.js';
import { fourLetterWord, zkMode } from '../../harness/servers/four-letter.js';
import { startZooKeeper, type ZkCluster } from '../../harness/servers/zookeeper.js';
import { eventually } from '../../harness/wait.js';

const WORKER = fileURLToPath(new URL('../../harness/workers/many-locks-worker.ts', import.meta.url));

/**
 * Locks held by one session: the record of its close names every one of their entries (ZooKeeper 3.6+,
 * ZOOKEEPER-4306), here about 1.1 MB of paths, over the server's 1 MB jute.maxbuffer.
 */
const LOCKS = 15_000;
/**
 * The worker's session timeout, the server's largest: its heartbeats wait behind a batch of acquires
 * (a second or two each on a loaded machine; 10 s was once not enough).
 */
const SESSION_TIMEOUT_MS = 20_000;
/** Acquires the worker sends at once. */
const BATCH = 500;
/** Starting Node with tsx on a busy 2-core machine takes seconds; taking the locks, a few session timeouts. */
const WORKER_LIMIT_MS = SESSION_TIMEOUT_MS * 6;

/** A value of the server's `mntr` (e.g. zk_ephemerals_count), or undefined if it does not answer. */
async function monitored(port: number, key: string): Promise<number | undefined> {
  const reply = await fourLetterWord(port, 'mntr').catch(() => '');
  const line = reply.split('\n').find((text) => text.startsWith(`${key}\t`));
  return line === undefined ? undefined : Number(line.split('\t')[1]);
}

/** Resolves with the first line of the worker's stdout that starts with `prefix`. */
function lineFrom(child: ChildProcess & { stdout: Readable }, prefix: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString();
      const line = text.split('\n').find((candidate) => candidate.startsWith(prefix));
      if (line === undefined) return;
      child.stdout.off('data', onData);
      resolve(line);
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the worker exited (${code}) before saying "${prefix}"`)));
  });
}

describe(`ZooKeeper: a session that took ${LOCKS} locks ends, and the server carries on`, () => {
  let cluster: ZkCluster;
  beforeAll(async () => {
    cluster = await startZooKeeper({ size: 1 });
  }, 60_000);
  afterAll(() => cluster?.stop());

  /** The server answers, holds no entry, grants the first and last of the locks, and does so again after a restart. */
  async function expectServing(namespace: string): Promise<void> {
    const member = cluster.members[0]!;
    const url = `zk://${cluster.connectString}/${namespace}`;
    for (const restarted of [false, true]) {
      if (restarted) {
        await member.kill();
        await member.start();
      }
      expect(await zkMode(member.clientPort)).toBe('standalone');
      expect(await monitored(member.clientPort, 'zk_ephemerals_count')).toBe(0);
      const session = await connect(url, { sessionTimeoutMs: SESSION_TIMEOUT_MS });
      try {
        for (const name of ['lock-0', `lock-${LOCKS - 1}`]) {
          const lock = await new FairMutex(session, name).acquire({ timeoutMs: SESSION_TIMEOUT_MS });
          await lock.release();
        }
      } finally {
        await session.close();
      }
    }
  }

  it.each(['closes its session', 'is killed'] as const)(
    'a process holding them that %s',
    async (ending) => {
      const namespace = `closing-${ending === 'is killed' ? 'killed' : 'closed'}`;
      const port = cluster.members[0]!.clientPort;
      const url = `zk://${cluster.connectString}/${namespace}`;
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', WORKER, url, String(LOCKS), String(BATCH), String(SESSION_TIMEOUT_MS)],
        {
          stdio: ['pipe', 'pipe', 'inherit'],
        },
      );
      const limit = setTimeout(() => child.kill('SIGKILL'), WORKER_LIMIT_MS);
      try {
        await lineFrom(child, 'held ');
        expect(await monitored(port, 'zk_ephemerals_count')).toBe(LOCKS);
        if (ending === 'closes its session') {
          const closed = lineFrom(child, 'closed');
          child.stdin.write('close\n');
          await closed;
          // The server answers the close once the entries are gone (the close record applied).
          expect(await monitored(port, 'zk_ephemerals_count')).toBe(0);
        } else {
          child.kill('SIGKILL');
        }
        // Killed: the server expires the session within a timeout (and a tick).
        await eventually(
          'every entry gone',
          async () => (await monitored(port, 'zk_ephemerals_count')) === 0,
          SESSION_TIMEOUT_MS * 3,
        );
        await expectServing(namespace);
      } finally {
        clearTimeout(limit);
        child.kill('SIGKILL');
      }
    },
    WORKER_LIMIT_MS + SESSION_TIMEOUT_MS * 10,
  );
});

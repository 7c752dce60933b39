import { createInterface } from 'node:readline';

import { FairMutex } from '../recipes/mutex.js';
import { mkdirp } from '../src/backends/zookeeper/mkdirp.js';
import { connect } from '../src/connect.js';
import { nowUs } from './clock.js';
import { RawQueueLock } from './raw-lock.js';
import { redisSemaphorePeer, redlockPeer } from './redis-peers.js';
import { openClient } from './zk-client.js';

/**
 * One of the contending processes of the contended benchmark: `node contender.js <url> <lock>` (a
 * baton URL, `raw://host:port` for the raw queue lock on the same client, `advisory+postgres://...`
 * for PostgreSQL's advisory lock, or `getlock+mysql://...` for MySQL's `GET_LOCK`), then
 * `contend <ms>` on stdin acquires and releases the lock for that long, holding it for no time at all,
 * and answers one JSON line with every grant and release time and the holder's fencing token (which
 * grows in queue order, so the grant order can be checked against the queue order). `quit` or the end
 * of stdin closes the session and exits.
 */
async function main(): Promise<void> {
  const [url, name] = process.argv.slice(2) as [string, string];
  const { cycle, close } = url.startsWith('raw://')
    ? await raw(url.slice('raw://'.length), name)
    : url.startsWith('advisory+')
      ? await advisory(url.slice('advisory+'.length))
      : url.startsWith('getlock+')
        ? await getLock(url.slice('getlock+'.length))
        : /^(redlock|semaphore)\+/.test(url)
          ? polling(url, name)
          : await baton(url, name);
  process.stdout.write('ready\n');
  for await (const line of createInterface({ input: process.stdin })) {
    const [command, argument] = line.split(' ');
    if (command !== 'contend') break;
    process.stdout.write(`${JSON.stringify(await contend(cycle, Number(argument)))}\n`);
  }
  await close();
}

/** One acquisition: resolves once granted with the queue order and a function that releases. */
type Cycle = () => Promise<{ order: string; release(): Promise<void> }>;

async function baton(url: string, name: string): Promise<{ cycle: Cycle; close(): Promise<void> }> {
  const session = await connect(
    url,
    url.startsWith('postgres') ? { sessionTimeoutMs: 10_000 } : { sessionTimeoutMs: 10_000, ttlSeconds: 10 },
  );
  const mutex = new FairMutex(session, name);
  const cycle: Cycle = async () => {
    const lock = await mutex.acquire();
    return { order: lock.fencingToken.toString(), release: () => lock.release() };
  };
  return { cycle, close: () => session.close() };
}

/** `raw://host:port`: the raw queue lock on the same client, as the floor under the same load. */
async function raw(hosts: string, name: string): Promise<{ cycle: Cycle; close(): Promise<void> }> {
  const client = await openClient(hosts);
  const dir = `/bench-raw/${name}`;
  await mkdirp(client, dir);
  const lock = new RawQueueLock(client, dir);
  const cycle: Cycle = async () => {
    const { path, sequence } = await lock.acquire();
    return { order: String(sequence), release: () => lock.release(path) };
  };
  return { cycle, close: async () => client.close() };
}

/**
 * `advisory+postgres://...`: PostgreSQL's own advisory lock, one connection per process blocked in
 * pg_advisory_lock. It has no queue order to report: the order is the grant's count in this process.
 */
async function advisory(url: string): Promise<{ cycle: Cycle; close(): Promise<void> }> {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  let grants = 0;
  const cycle: Cycle = async () => {
    await client.query('SELECT pg_advisory_lock(7)');
    return {
      order: String((grants += 1)),
      release: async () => void (await client.query('SELECT pg_advisory_unlock(7)')),
    };
  };
  return { cycle, close: () => client.end() };
}

/**
 * `getlock+mysql://...`: MySQL's own `GET_LOCK`, one connection per process blocked in it. No queue
 * order either: the grant's count in this process.
 */
async function getLock(url: string): Promise<{ cycle: Cycle; close(): Promise<void> }> {
  const { default: mysql } = await import('mysql2/promise');
  const connection = await mysql.createConnection(url);
  let grants = 0;
  const cycle: Cycle = async () => {
    await connection.query("SELECT GET_LOCK('bench-contended', 60)");
    return {
      order: String((grants += 1)),
      release: async () => void (await connection.query("SELECT RELEASE_LOCK('bench-contended')")),
    };
  };
  return { cycle, close: () => connection.end() };
}

/**
 * `redlock+redis://host:port` or `semaphore+redis://host:port`: a Redis lock library that polls. It
 * has no queue order: the grant time stands in for it (so the order check has nothing to find).
 */
function polling(url: string, name: string): { cycle: Cycle; close(): Promise<void> } {
  const [kind, target] = url.split('+') as [string, string];
  const peer = kind === 'redlock' ? redlockPeer(target, name) : redisSemaphorePeer(target, name);
  const cycle: Cycle = async () => {
    const release = await peer.acquire();
    return { order: String(nowUs()), release };
  };
  return { cycle, close: () => peer.close() };
}

async function contend(cycle: Cycle, ms: number): Promise<unknown> {
  const startedUs = nowUs();
  const until = startedUs + ms * 1000;
  const acquisitions: [number, number, string][] = [];
  while (nowUs() < until) {
    const held = await cycle();
    const grantedUs = nowUs();
    const releasingUs = nowUs();
    await held.release();
    acquisitions.push([grantedUs, releasingUs, held.order]);
  }
  return { startedUs, finishedUs: nowUs(), acquisitions };
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

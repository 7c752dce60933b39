import zookeeper from 'node-zookeeper-client';
import { FairMutex } from '../recipes/mutex.js';
import { corked, create, getChildren, mkdirp, remove, type ZkClient } from '../src/backends/zookeeper/client.js';
import { connect } from '../src/connect.js';
import { ReadWriteLock } from '../recipes/rw-lock.js';
import type { Lock } from '../recipes/mutex.js';
import { KazooPeer } from './kazoo.js';
import { alternate, summarize, timed, type Block, type Summary } from './stats.js';

const EPHEMERAL_SEQUENTIAL = zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL;

/** The least a queue lock needs, awaited one by one: create, list, delete. */
async function rawAwaited(client: ZkClient, dir: string): Promise<void> {
  const path = await create(client, `${dir}/_c_00000000-0000-0000-0000-000000000000-lock-`, EPHEMERAL_SEQUENTIAL);
  await getChildren(client, dir);
  await remove(client, path);
}

/** The same with the create and the listing pipelined on the connection, each in its own write. */
async function rawPipelined(client: ZkClient, dir: string): Promise<void> {
  const [path] = await Promise.all([
    create(client, `${dir}/_c_00000000-0000-0000-0000-000000000000-lock-`, EPHEMERAL_SEQUENTIAL),
    getChildren(client, dir),
  ]);
  await remove(client, path);
}

/** The pipelined floor with both requests in one socket write, as baton sends them. */
async function rawOneWrite(client: ZkClient, dir: string): Promise<void> {
  const [path] = await Promise.all(
    corked(client, () => [create(client, `${dir}/_c_00000000-0000-0000-0000-000000000000-lock-`, EPHEMERAL_SEQUENTIAL), getChildren(client, dir)]),
  );
  await remove(client, path);
}

function openClient(connectString: string): Promise<ZkClient> {
  const client = zookeeper.createClient(connectString, { sessionTimeout: 10_000 });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ZooKeeper at ${connectString}`)), 15_000);
    client.once('connected', () => {
      clearTimeout(timer);
      resolve(client);
    });
    client.connect();
  });
}

/** ZooKeeper uncontended cycles: baton's recipes beside the raw floor and kazoo's, in one run. */
export async function benchZkCycle(connectString: string, options: { blocks: number; perBlock: number }): Promise<Summary[]> {
  const client = await openClient(connectString);
  const session = await connect(`zk://${connectString}/bench`);
  const kazoo = await KazooPeer.start(connectString);
  try {
    await mkdirp(client, '/bench-raw/awaited');
    await mkdirp(client, '/bench-raw/pipelined');
    await mkdirp(client, '/bench-raw/one-write');
    const mutex = new FairMutex(session, 'cycle');
    const rw = new ReadWriteLock(session, 'rw-cycle');
    const cycle = (lock: Lock) => timed(async () => (await lock.acquire()).release());
    const contenders: Record<string, Block> = {
      [CASES.awaited]: timed(() => rawAwaited(client, '/bench-raw/awaited')),
      [CASES.pipelined]: timed(() => rawPipelined(client, '/bench-raw/pipelined')),
      [CASES.oneWrite]: timed(() => rawOneWrite(client, '/bench-raw/one-write')),
      [CASES.mutex]: cycle(mutex),
      [CASES.read]: cycle(rw.readLock),
      [CASES.write]: cycle(rw.writeLock),
    };
    if (kazoo !== undefined) {
      contenders[CASES.kazooLock] = (count) => kazoo.cycles('lock', count);
      contenders[CASES.kazooRead] = (count) => kazoo.cycles('read', count);
      contenders[CASES.kazooWrite] = (count) => kazoo.cycles('write', count);
    } else {
      process.stdout.write('kazoo not installed (apt-get install python3-kazoo): its columns are left out\n');
    }
    const samples = await alternate(contenders, { ...options, warmup: 200 });
    return Object.entries(samples).map(([name, values]) => summarize(name, values));
  } finally {
    await kazoo?.stop();
    await session.close();
    client.close();
  }
}

export const CASES = {
  awaited: 'raw floor, awaited (create, getChildren, delete)',
  pipelined: 'raw floor, pipelined (create+getChildren, delete)',
  oneWrite: 'raw floor, pipelined in one socket write',
  mutex: 'baton FairMutex acquire+release',
  read: 'baton readLock acquire+release',
  write: 'baton writeLock acquire+release',
  kazooLock: 'kazoo Lock acquire+release',
  kazooRead: 'kazoo ReadLock acquire+release',
  kazooWrite: 'kazoo WriteLock acquire+release',
} as const;

import zookeeper from 'node-zookeeper-client';
import { FairMutex } from '../recipes/mutex.js';
import { create, getChildren, mkdirp, remove, type ZkClient } from '../src/backends/zookeeper/client.js';
import { connect } from '../src/connect.js';
import { alternate, summarize, type Summary } from './stats.js';

const EPHEMERAL_SEQUENTIAL = zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL;

/** The least a queue lock needs, awaited one by one: create, list, delete. */
async function rawAwaited(client: ZkClient, dir: string): Promise<void> {
  const path = await create(client, `${dir}/_c_00000000-0000-0000-0000-000000000000-lock-`, EPHEMERAL_SEQUENTIAL);
  await getChildren(client, dir);
  await remove(client, path);
}

/** The same with the create and the listing pipelined on the connection, as baton sends them. */
async function rawPipelined(client: ZkClient, dir: string): Promise<void> {
  const [path] = await Promise.all([
    create(client, `${dir}/_c_00000000-0000-0000-0000-000000000000-lock-`, EPHEMERAL_SEQUENTIAL),
    getChildren(client, dir),
  ]);
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

/** ZooKeeper uncontended acquire + release next to the raw floor, measured in one run. */
export async function benchZkCycle(connectString: string, options: { blocks: number; perBlock: number }): Promise<Summary[]> {
  const client = await openClient(connectString);
  const session = await connect(`zk://${connectString}/bench`);
  try {
    await mkdirp(client, '/bench-raw/awaited');
    await mkdirp(client, '/bench-raw/pipelined');
    const mutex = new FairMutex(session, 'cycle');
    const samples = await alternate(
      {
        'raw floor, awaited (create, getChildren, delete)': () => rawAwaited(client, '/bench-raw/awaited'),
        'raw floor, pipelined (create+getChildren, delete)': () => rawPipelined(client, '/bench-raw/pipelined'),
        'baton FairMutex acquire+release': async () => {
          const lock = await mutex.acquire();
          await lock.release();
        },
      },
      { ...options, warmup: 200 },
    );
    return Object.entries(samples).map(([name, values]) => summarize(name, values));
  } finally {
    await session.close();
    client.close();
  }
}

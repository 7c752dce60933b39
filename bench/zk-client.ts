import zookeeper from 'node-zookeeper-client';

import type { ZkClient } from '../src/backends/zookeeper/client.js';

/** A plain node-zookeeper-client connection, for the raw floors: the same client baton drives. */
export function openClient(connectString: string): Promise<ZkClient> {
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

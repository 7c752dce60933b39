import zookeeper from 'node-zookeeper-client';

import { create, getChildren, remove, watchData, type ZkClient } from '../src/backends/zookeeper/client.js';
import { corked } from '../src/backends/zookeeper/client/pipeline.js';
import { FLOOR_NODE } from './floor-name.js';

/**
 * The least a fair queue lock does on ZooKeeper, written straight on the client with nothing else:
 * create a sequential node and list the queue in one write; while a node is ahead, watch the one just
 * ahead and list again once it is gone; delete to release. No timeouts, no session tracking, no
 * recovery. 8 processes running it show what the same client and server give under the same load.
 * Its nodes are named like baton's (FLOOR_NODE).
 */
export class RawQueueLock {
  constructor(
    private readonly client: ZkClient,
    private readonly dir: string,
  ) {}

  /** Resolves with the node's path and its sequence once it is first in the queue. */
  async acquire(): Promise<{ path: string; sequence: number }> {
    const { client, dir } = this;
    const [path, listing] = await Promise.all(
      corked(client, () => [
        create(client, `${dir}/${FLOOR_NODE}`, zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL),
        getChildren(client, dir),
      ]),
    );
    const name = path.slice(dir.length + 1);
    for (let children = listing.children; ; children = (await getChildren(client, dir)).children) {
      const ahead = predecessor(children, name);
      if (ahead === undefined) return { path, sequence: Number(name.slice(-10)) };
      await gone(client, `${dir}/${ahead}`);
    }
  }

  release(path: string): Promise<void> {
    return remove(this.client, path);
  }
}

/** The node just ahead of `name` in sequence order, if any. */
function predecessor(children: readonly string[], name: string): string | undefined {
  let ahead: string | undefined;
  for (const child of children) if (child < name && (ahead === undefined || child > ahead)) ahead = child;
  return ahead;
}

/** Resolves once the node is deleted (at once if it already is). */
function gone(client: ZkClient, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    watchData(client, path, () => resolve()).then((present) => present || resolve(), reject);
  });
}

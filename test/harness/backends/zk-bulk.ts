import zookeeper from 'node-zookeeper-client';

import { create, remove, type ZkClient } from '../../../src/backends/zookeeper/client.js';
import { corked } from '../../../src/backends/zookeeper/client/pipeline.js';

/** Requests sent at once by `pipelined`: a fraction of a second of the server's work. */
export const BULK_BATCH = 1_000;

/** A plain node-zookeeper-client connection for a test's bulk work (thousands of nodes), connected. */
export function openBulkClient(connectString: string, sessionTimeoutMs: number): Promise<ZkClient> {
  const client = zookeeper.createClient(connectString, { sessionTimeout: sessionTimeoutMs, retries: 0 });
  return new Promise((resolve) => {
    client.once('connected', () => resolve(client));
    client.connect();
  });
}

/** Runs `request` on every item, `BULK_BATCH` at a time, each batch's requests in one write (as bench/scale.ts). */
export async function pipelined<T, R>(
  client: ZkClient,
  items: readonly T[],
  request: (item: T) => Promise<R>,
): Promise<R[]> {
  const results: R[] = [];
  for (let from = 0; from < items.length; from += BULK_BATCH)
    results.push(...(await Promise.all(corked(client, () => items.slice(from, from + BULK_BATCH).map(request)))));
  return results;
}

/** Deletes `paths` (deepest first is the caller's order), pipelined; missing ones are fine. */
export async function removeAll(client: ZkClient, paths: readonly string[]): Promise<void> {
  await pipelined(client, paths, (path) => remove(client, path).catch(() => undefined));
}

/** Creates the persistent node `path`; one that exists is fine. */
export async function ensureNode(client: ZkClient, path: string): Promise<void> {
  await create(client, path, zookeeper.CreateMode.PERSISTENT).catch((error: unknown) => {
    if ((error as { getCode?: () => number }).getCode?.() !== zookeeper.Exception.NODE_EXISTS) throw error;
  });
}

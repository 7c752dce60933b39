import { Etcd3 } from 'etcd3';
import zookeeper from 'node-zookeeper-client';

import { fourLetterWord } from './four-letter.js';

type Client = zookeeper.Client;

export interface ZNode {
  readonly path: string;
  readonly ephemeralOwner: bigint;
  readonly numChildren: number;
}

/** A raw client for the duration of `use`; `digest` (`user:password`) is sent as its credentials. */
export async function withZkClient<T>(
  connectString: string,
  use: (client: Client) => Promise<T>,
  digest?: string,
): Promise<T> {
  const client = zookeeper.createClient(connectString, { sessionTimeout: 4_000, retries: 0 });
  if (digest !== undefined) client.addAuthInfo('digest', Buffer.from(digest));
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ZooKeeper at ${connectString}`)), 10_000);
      client.once('connected', () => {
        clearTimeout(timer);
        resolve();
      });
      client.connect();
    });
    return await use(client);
  } finally {
    client.close();
  }
}

function call<T>(run: (callback: (error: unknown, value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => run((error, value) => (error ? reject(error) : resolve(value))));
}

function isNoNode(error: unknown): boolean {
  return error instanceof zookeeper.Exception && error.getCode() === zookeeper.Exception.NO_NODE;
}

async function tree(client: Client, root: string): Promise<ZNode[]> {
  const nodes: ZNode[] = [];
  const visit = async (path: string): Promise<void> => {
    let stat: zookeeper.Stat;
    let children: string[];
    try {
      stat = await call<zookeeper.Stat>((cb) => client.exists(path, (e, s) => cb(e, s)));
      if (!stat) return;
      children = await call<string[]>((cb) => client.getChildren(path, (e, c) => cb(e, c)));
    } catch (error) {
      if (isNoNode(error)) return;
      throw error;
    }
    nodes.push({ path, ephemeralOwner: stat.ephemeralOwner.readBigUInt64BE(0), numChildren: children.length });
    await Promise.all(children.map((child) => visit(`${path}/${child}`)));
  };
  await visit(root);
  return nodes;
}

/**
 * `use` on a fresh client, again on another if the connection is lost meanwhile: an ensemble member
 * under the load of a full test run can fall behind its leader for `syncLimit` ticks and drop its
 * clients, and these checks (which read or delete, and may be repeated) must not fail a test for it.
 */
async function withZkClientRetried<T>(
  connectString: string,
  use: (client: Client) => Promise<T>,
  digest?: string,
): Promise<T> {
  for (let attempt = 0; ; attempt += 1) {
    try {
      return await withZkClient(connectString, use, digest);
    } catch (error) {
      const lost = error instanceof zookeeper.Exception && error.getCode() === zookeeper.Exception.CONNECTION_LOSS;
      if (!lost || attempt >= 4) throw error;
    }
  }
}

/** Every znode under `path`, itself included (none if it does not exist). */
export function zkTree(connectString: string, path: string, digest?: string): Promise<ZNode[]> {
  return withZkClientRetried(connectString, (client) => tree(client, path), digest);
}

/** Deletes `path` and everything under it; a missing path is fine. */
export function zkRemoveTree(connectString: string, path: string, digest?: string): Promise<void> {
  return withZkClientRetried(
    connectString,
    async (client) => {
      const nodes = (await tree(client, path)).sort((a, b) => b.path.length - a.path.length);
      for (const node of nodes) {
        await call<void>((cb) => client.remove(node.path, -1, (e) => cb(isNoNode(e) ? null : e, undefined)));
      }
    },
    digest,
  );
}

/**
 * Throws, listing them, if any node under `path` is ephemeral (a queue entry) or a leaf is anything but
 * an empty lock directory; then removes `path`.
 */
export async function assertZkClean(connectString: string, path: string): Promise<void> {
  const leftovers = (await zkTree(connectString, path)).filter((node) => node.ephemeralOwner !== 0n);
  if (leftovers.length > 0) throw new Error(`left behind under ${path}: ${leftovers.map((n) => n.path).join(', ')}`);
  await zkRemoveTree(connectString, path);
}

/** Paths under `prefix` with a watch still registered, from `wchp` on each server. */
export async function zkWatchesUnder(ports: readonly number[], prefix: string): Promise<string[]> {
  const paths = new Set<string>();
  for (const port of ports) {
    let reply: string;
    try {
      reply = await fourLetterWord(port, 'wchp');
    } catch {
      continue; // a member that is down holds no watches of live sessions
    }
    for (const line of reply.split('\n')) {
      if (line.startsWith(`${prefix}/`) || line === prefix) paths.add(line.trim());
    }
  }
  return [...paths].sort();
}

/** Throws if any key exists under `prefix` (listing them), then deletes the prefix. */
export async function assertEtcdClean(endpoints: string[], prefix: string): Promise<void> {
  const client = new Etcd3({ hosts: endpoints });
  try {
    const keys = await client.getAll().prefix(prefix).keys();
    if (keys.length > 0) throw new Error(`left behind under ${prefix}: ${keys.join(', ')}`);
    await client.delete().prefix(prefix);
  } finally {
    client.close();
  }
}

import zookeeper from 'node-zookeeper-client';
import { BackendError } from '../../../recipes/errors.js';

export type ZkClient = zookeeper.Client;
export type ZkStat = zookeeper.Stat;
export const ZkCode = zookeeper.Exception;
/** Everyone may do everything: the default until ACL policies arrive (the security issue). */
const OPEN_ACL: zookeeper.ACL[] = (zookeeper.ACL as unknown as { OPEN_ACL_UNSAFE: zookeeper.ACL[] }).OPEN_ACL_UNSAFE;

/** The numeric ZooKeeper error code of a client failure (or of its `cause`), or undefined. */
export function zkCode(error: unknown): number | undefined {
  if (error instanceof zookeeper.Exception) return error.getCode();
  if (error instanceof Error && error.cause !== undefined) return zkCode(error.cause);
  return undefined;
}

export function isCode(error: unknown, ...codes: number[]): boolean {
  const code = zkCode(error);
  return code !== undefined && codes.includes(code);
}

/** A ZooKeeper long (jute serialises it as 8 big-endian bytes) as a bigint. */
export function zkLong(value: unknown): bigint {
  if (Buffer.isBuffer(value) && value.length === 8) return value.readBigUInt64BE(0);
  throw new BackendError(`unexpected ZooKeeper long ${String(value)}`);
}

/** Promise adapters; requests are queued in call order, so two calls made back to back are pipelined. */
export function create(client: ZkClient, path: string, mode: number, data: Buffer = Buffer.alloc(0)): Promise<string> {
  return new Promise((resolve, reject) => {
    client.create(path, data, OPEN_ACL, mode, (error, created) =>
      error ? reject(error) : resolve(created),
    );
  });
}

export function getData(client: ZkClient, path: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    client.getData(path, (error, data) => (error ? reject(error) : resolve(data ?? Buffer.alloc(0))));
  });
}

/** The node's data and stat, or null if it does not exist. */
export function getDataStat(client: ZkClient, path: string): Promise<{ data: Buffer; stat: ZkStat } | null> {
  return new Promise((resolve, reject) => {
    client.getData(path, (error, data, stat) => {
      if (error === null || error === undefined) resolve({ data: data ?? Buffer.alloc(0), stat });
      else if (isCode(error, zookeeper.Exception.NO_NODE)) resolve(null);
      else reject(error);
    });
  });
}

export function getChildren(client: ZkClient, path: string): Promise<{ children: string[]; stat: ZkStat }> {
  return new Promise((resolve, reject) => {
    client.getChildren(path, (error, children, stat) => (error ? reject(error) : resolve({ children, stat })));
  });
}

export function exists(client: ZkClient, path: string): Promise<ZkStat | null> {
  return new Promise((resolve, reject) => {
    client.exists(path, (error, stat) => (error ? reject(error) : resolve(stat ?? null)));
  });
}

export function remove(client: ZkClient, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    client.remove(path, -1, (error) => (error ? reject(error) : resolve()));
  });
}

export function mkdirp(client: ZkClient, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    client.mkdirp(path, (error) => (error ? reject(error) : resolve()));
  });
}

/** The client's current socket (node-zookeeper-client keeps it private; a new one after a reconnect). */
function socketOf(client: ZkClient): { cork(): void; uncork(): void } | undefined {
  return (client as unknown as { connectionManager?: { socket?: { cork(): void; uncork(): void } } }).connectionManager?.socket;
}

/**
 * Runs `send` with the client's socket corked, so that the requests it makes leave in one write (one
 * system call, one TCP segment) instead of one each: node-zookeeper-client writes every request to
 * the socket the moment it is made.
 */
export function corked<T>(client: ZkClient, send: () => T): T {
  const socket = socketOf(client);
  socket?.cork();
  try {
    return send();
  } finally {
    socket?.uncork();
  }
}

const corkedForTick = new WeakSet<object>();

/**
 * Corks the client's socket until the current turn of the event loop has run its callbacks and
 * promise reactions: every request made meanwhile (many locks on one session answer in one read and
 * ask again in one turn) leaves in one write instead of a system call each. A write costs more CPU
 * than encoding the request; the requests wait microseconds at most.
 */
export function corkForTick(client: ZkClient): void {
  const socket = socketOf(client);
  if (socket === undefined || corkedForTick.has(socket)) return;
  corkedForTick.add(socket);
  socket.cork();
  process.nextTick(() => {
    corkedForTick.delete(socket);
    socket.uncork();
  });
}

/** Reads the node and, only if it exists, leaves a watch on it (getData sets none on a missing node). */
export function watchData(client: ZkClient, path: string, watcher: (event: zookeeper.Event) => void): Promise<boolean> {
  return new Promise((resolve, reject) => {
    client.getData(path, watcher, (error) => {
      if (error === null || error === undefined) resolve(true);
      else if (isCode(error, zookeeper.Exception.NO_NODE)) resolve(false);
      else reject(error);
    });
  });
}

/**
 * Lists a directory and leaves a watch that fires on its next change: a child watch if it exists, an
 * exists watch (fired by its creation) if it does not. Null when the directory does not exist.
 */
export async function watchChildren(
  client: ZkClient,
  path: string,
  watcher: (event: zookeeper.Event) => void,
): Promise<{ children: string[]; stat: ZkStat } | null> {
  for (;;) {
    const listed = await new Promise<{ children: string[]; stat: ZkStat } | null>((resolve, reject) => {
      client.getChildren(path, watcher, (error, children, stat) => {
        if (error === null || error === undefined) resolve({ children, stat });
        else if (isCode(error, zookeeper.Exception.NO_NODE)) resolve(null);
        else reject(error);
      });
    });
    if (listed !== null) return listed;
    const stat = await new Promise<ZkStat | null>((resolve, reject) => {
      client.exists(path, watcher, (error, found) => (error ? reject(error) : resolve(found ?? null)));
    });
    if (stat === null) return null;
    // Created between the two requests: list it again, now that it exists.
  }
}

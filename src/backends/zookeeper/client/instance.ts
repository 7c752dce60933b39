/**
 * What baton does on its own node-zookeeper-client instances beyond the client's public API: each
 * function reaches into one client's connection manager (never the module, its classes or prototypes),
 * checks the manager's shape first, and does nothing on a client of another make.
 */
import type zookeeper from 'node-zookeeper-client';

import { hangUpLimitMs } from '../../../timing.js';
import type { ZkClient } from '../client.js';

/**
 * node-zookeeper-client keeps the bytes of a reply it has not read in full (`pendingBuffer`) and does not
 * drop them when the connection ends. A connection that died in the middle of a reply (a member that
 * hung mid-write, which the driver then drops for its silence) would leave them to be read as the start
 * of the next connection's first reply, the one that names the session: garbage there ends a live
 * session. Each new connection of `client` starts from a clean frame.
 */
export function dropTornFrames(client: ZkClient): void {
  type Manager = { connect: () => void; pendingBuffer: Buffer | null };
  const manager = (client as unknown as { connectionManager?: Partial<Manager> }).connectionManager;
  if (manager === undefined || typeof manager.connect !== 'function' || !('pendingBuffer' in manager)) return;
  const connect = manager.connect;
  manager.connect = function (this: Manager) {
    this.pendingBuffer = null;
    connect.call(this);
  };
}

/**
 * The last error of `client`'s sockets (a refused connection, a name that does not resolve), for the
 * message of a connect that timed out: the client itself only retries, and says nothing of why.
 */
export function rememberSocketErrors(client: ZkClient): () => Error | undefined {
  type Manager = { onSocketError: (error: Error) => void };
  const manager = (client as unknown as { connectionManager?: Partial<Manager> }).connectionManager;
  const onSocketError = manager?.onSocketError;
  let last: Error | undefined;
  if (manager === undefined || typeof onSocketError !== 'function') return () => last;
  // Bound to each socket as the manager makes it: set before it connects, this one is bound.
  manager.onSocketError = function (this: Manager, error: Error) {
    last = error;
    onSocketError.call(this, error);
  };
  return () => last;
}

/** The largest request id: the protocol's ids are signed 32-bit integers. */
const MAX_XID = 0x7fffffff;
/**
 * Ids are numbered from 1 again once past this: 2^28 ids short of the largest, far more requests than
 * a session sends between two of the checks (every request of baton's, and every heartbeat).
 */
const RENUMBER_PAST = MAX_XID - 2 ** 28;

/**
 * node-zookeeper-client numbers a session's requests with an id it never wraps: after 2^31 requests
 * (two weeks of a busy session) encoding one throws, every request fails, and closing the client throws
 * out of a timer. As ZooKeeper's Java client does, the id goes back to 1 near the largest one (ids only
 * pair a reply with its request, of which few are in flight). The returned check does it; the driver
 * runs it before each request it sends. Not an accessor on the connection manager's `xid`: defining one
 * turns the manager into a dictionary-mode object (slow properties), which every request and reply of
 * the client then reads through (measured once, 8 contending processes: 2.6% more CPU per acquisition
 * with the accessor, within the noise of one run).
 */
export function requestIdWrap(client: ZkClient): () => void {
  const manager = (client as unknown as { connectionManager?: { xid?: unknown } }).connectionManager;
  if (manager === undefined || typeof manager.xid !== 'number') return () => undefined;
  return () => {
    if ((manager.xid as number) > RENUMBER_PAST) manager.xid = 1;
  };
}

/**
 * node-zookeeper-client queues a new connection's auth packets (and the watches it sets again) behind
 * every request made while it was disconnected, so the server answered those requests without the
 * session's credentials: under a creator-only ACL a release made during a blip failed with NoAuth and
 * left its entry in the queue. As ZooKeeper's Java client does, each new connection of `client` sends
 * them ahead of everything that was waiting.
 */
export function sendAuthFirst(client: ZkClient): void {
  aroundConnect(client, (manager, connect) => {
    const waiting = manager.packetQueue?.queue;
    const before = Array.isArray(waiting) ? waiting.length : 0;
    connect();
    // Nothing is sent before the server accepts the connection: what the call queued sits at the end.
    const queue = manager.packetQueue?.queue;
    if (Array.isArray(queue) && queue.length > before && before > 0) queue.unshift(...queue.splice(before));
  });
}

/** Calls `listener` each time `client` begins a connection, just before it writes the connect request. */
export function onConnecting(client: ZkClient, listener: () => void): void {
  aroundConnect(client, (_manager, connect) => {
    listener();
    connect();
  });
}

/** The part of node-zookeeper-client's connection manager that the wrappers of a new connection use. */
export interface ConnectingManager {
  onSocketConnected: () => void;
  packetQueue?: { queue?: unknown[] };
}

/**
 * Runs `around` in place of the connection manager's handler of a new socket (which writes the connect
 * request and queues the auth packets), `connect` calling the handler it replaces. The manager binds
 * the handler to each socket as it makes it, so later connections see the wrapper.
 */
export function aroundConnect(
  client: ZkClient,
  around: (manager: ConnectingManager, connect: () => void) => void,
): void {
  const manager = (client as unknown as { connectionManager?: Partial<ConnectingManager> }).connectionManager;
  const onSocketConnected = manager?.onSocketConnected;
  if (manager === undefined || typeof onSocketConnected !== 'function') return;
  manager.onSocketConnected = function (this: ConnectingManager) {
    around(this, () => onSocketConnected.call(this));
  };
}

/**
 * Ends the client's socket at once. node-zookeeper-client's close() waits for the server to hang up,
 * which a server that stopped answering never does; the open socket would keep the process alive.
 */
export function destroySocket(client: ZkClient): void {
  const manager = (
    client as unknown as {
      connectionManager?: { socket?: { destroy(): void }; connectTimeoutHandler?: NodeJS.Timeout };
    }
  ).connectionManager;
  manager?.socket?.destroy();
  // The timer of a dial that never connected: pending, it would keep the process alive a session timeout.
  clearTimeout(manager?.connectTimeoutHandler);
}

/**
 * Closes the client of a lost session. The connection may still stand (the loss came in a reply), so
 * the server is asked to close it; if it has not hung up within a third of the session timeout (2 s
 * at most: a generous round trip), the socket is destroyed, so that no open socket keeps the process
 * alive. Closing may send a closeSession the server answers UNKNOWN_SESSION, a code the client's
 * own reader would throw on (baton's reader, replies.ts, does not).
 */
export function hangUp(client: ZkClient, timeoutMs: number): void {
  const timer = setTimeout(() => destroySocket(client), hangUpLimitMs(timeoutMs));
  timer.unref();
  client.once('disconnected', () => clearTimeout(timer));
  client.close();
}

/**
 * Takes `watcher` off the client's data watches of `path`, so that the client keeps nothing for it and
 * does not set it again after a reconnect (the server keeps its copy until it fires or the connection
 * ends: a 3.4 client cannot remove a watch). False if the client's watch registry is not the expected one.
 */
export function dropDataWatcher(client: ZkClient, path: string, watcher: (event: zookeeper.Event) => void): boolean {
  const watchers = dataWatchersOf(client);
  if (watchers === undefined) return false;
  const emitter = watchers[path];
  if (emitter === undefined) return true;
  emitter.removeListener('notification', watcher);
  if (emitter.listenerCount('notification') === 0) delete watchers[path];
  return true;
}

/** Whether `dropDataWatcher` can do its work with this client. */
export function canDropDataWatchers(client: ZkClient): boolean {
  return dataWatchersOf(client) !== undefined;
}

type WatcherEmitter = { removeListener(event: string, listener: unknown): void; listenerCount(event: string): number };

/** The client's data watches by path (node-zookeeper-client 1.1 keeps an emitter per path), if found. */
function dataWatchersOf(client: ZkClient): Record<string, WatcherEmitter | undefined> | undefined {
  const manager = (client as unknown as { connectionManager?: { watcherManager?: { dataWatchers?: unknown } } })
    .connectionManager;
  const watchers = manager?.watcherManager?.dataWatchers;
  return watchers !== null && typeof watchers === 'object'
    ? (watchers as Record<string, WatcherEmitter | undefined>)
    : undefined;
}

import zookeeper from 'node-zookeeper-client';
import { BackendError } from '../../../recipes/errors.js';
import { started, type Start } from '../requests.js';
import { create2Direct, createDirect, createsDirectly, directQueue, getChildrenDirect, removeDirect, syncDirect, watchDataDirect } from './direct.js';
import { nameServerCodes } from './replies.js';
import type { AclPolicy } from './acl.js';

export type ZkClient = zookeeper.Client;
export type ZkStat = zookeeper.Stat;
export const ZkCode = zookeeper.Exception;

/**
 * Codes a ZooKeeper 3.5+ server answers that node-zookeeper-client 1.1 does not know. The client builds
 * the error for a reply inside its socket's data handler, and throws `Unknown code` there for these: an
 * uncaught exception, which ends the process. A request on a session the server has just removed is
 * answered UNKNOWN_SESSION, so a session expiring under load could crash its user's process: baton's
 * own client reads its replies itself (replies.ts) and fails just that request.
 */
export const ZkServerCode = {
  UNKNOWN_SESSION: -12,
  NEW_CONFIG_NO_QUORUM: -13,
  RECONFIG_IN_PROGRESS: -14,
  SESSION_MOVED: -118,
  NOT_READ_ONLY: -119,
  EPHEMERAL_ON_LOCAL_SESSION: -120,
  NO_WATCHER: -121,
  REQUEST_TIMEOUT: -122,
  RECONFIG_DISABLED: -123,
  SESSION_CLOSED_REQUIRE_SASL_AUTH: -124,
  QUOTA_EXCEEDED: -125,
  THROTTLED_OP: -127,
} as const;

// The server's names for the codes the client does not know, for the errors baton's reader makes.
nameServerCodes(ZkServerCode);

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

interface ConnectingManager {
  onSocketConnected: () => void;
  packetQueue?: { queue?: unknown[] };
}

/**
 * Runs `around` in place of the connection manager's handler of a new socket (which writes the connect
 * request and queues the auth packets), `connect` calling the handler it replaces. The manager binds
 * the handler to each socket as it makes it, so later connections see the wrapper.
 */
function aroundConnect(client: ZkClient, around: (manager: ConnectingManager, connect: () => void) => void): void {
  const manager = (client as unknown as { connectionManager?: Partial<ConnectingManager> }).connectionManager;
  const onSocketConnected = manager?.onSocketConnected;
  if (manager === undefined || typeof onSocketConnected !== 'function') return;
  manager.onSocketConnected = function (this: ConnectingManager) {
    around(this, () => onSocketConnected.call(this));
  };
}

export type { AclPolicy } from './acl.js';

export function aclFor(policy: AclPolicy): zookeeper.ACL[] {
  const { ACL, Id, Permission } = zookeeper as unknown as {
    ACL: new (permission: number, id: unknown) => zookeeper.ACL;
    Id: new (scheme: string, id: string) => unknown;
    Permission: { ALL: number; READ: number };
  };
  const creator = new ACL(Permission.ALL, new Id('auth', ''));
  const anyone = (permission: number): zookeeper.ACL => new ACL(permission, new Id('world', 'anyone'));
  switch (policy) {
    case 'open':
      return [anyone(Permission.ALL)];
    case 'creator-all-world-read':
      return [creator, anyone(Permission.READ)];
    case 'creator-only':
      return [creator];
  }
}

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

/** The open ACL, made once: a create without an ACL of its own uses it. */
const OPEN = aclFor('open');

// The hot requests go straight to the client's connection manager where they can (see direct.ts).
export function createStart(client: ZkClient, path: string, mode: number, data: Buffer = Buffer.alloc(0), acl = OPEN): Start<string> {
  return (done) => {
    const queue = directQueue(client);
    if (queue !== undefined && createsDirectly(data, acl)) createDirect(queue, path, data, acl, mode, done);
    else client.create(path, data, acl, mode, done);
  };
}

/**
 * Creates a queue entry and gives back its path and creation zxid (its fencing token): one CREATE2 when
 * baton hands the client's requests over itself (see direct.ts); otherwise the client's create, then
 * an `exists` for the zxid (a request more, for clients baton cannot hand requests to).
 */
export function createEntryStart(client: ZkClient, path: string, mode: number, data: Buffer = Buffer.alloc(0), acl = OPEN): Start<{ path: string; czxid: bigint }> {
  return (done) => {
    const queue = directQueue(client);
    if (queue !== undefined && createsDirectly(data, acl)) {
      create2Direct(queue, path, data, acl, mode, (error, created) => (error ? done(error) : done(null, { path: created!.path, czxid: zkLong(created!.stat.czxid) })));
      return;
    }
    client.create(path, data, acl, mode, (error, name) => {
      if (error) return done(error);
      client.exists(name, (failure, stat) => {
        if (failure) return done(failure);
        // Deleted by someone else before its stat could be read: gone, so the enqueue creates it again.
        if (!stat) return done((ZkCode as unknown as { create(code: number, path: string): Error }).create(ZkCode.NO_NODE, name));
        done(null, { path: name, czxid: zkLong(stat.czxid) });
      });
    });
  };
}

export function getChildrenStart(client: ZkClient, path: string): Start<{ children: string[]; stat: ZkStat }> {
  return (done) => {
    const queue = directQueue(client);
    if (queue !== undefined) getChildrenDirect(queue, path, done);
    else client.getChildren(path, (error, children, stat) => (error ? done(error) : done(null, { children, stat })));
  };
}

export function removeStart(client: ZkClient, path: string): Start<void> {
  return (done) => {
    const queue = directQueue(client);
    if (queue !== undefined) removeDirect(queue, path, done);
    else client.remove(path, -1, done);
  };
}

/**
 * A request the connection's member answers only while it is in touch with the leader: ZooKeeper's
 * `sync` when the client lets baton send it (see `syncDirect`), otherwise a plain read. `leader` says which.
 */
export function reachLeaderStart(client: ZkClient, path: string): { start: Start<unknown>; leader: boolean } {
  const queue = directQueue(client);
  if (queue === undefined) return { start: existsStart(client, path), leader: false };
  return { start: (done) => syncDirect(queue, path, done), leader: true };
}

export function existsStart(client: ZkClient, path: string): Start<ZkStat | null> {
  return (done) => client.exists(path, (error, stat) => (error ? done(error) : done(null, stat ?? null)));
}

/** Reads the node and, only if it exists, leaves a watch on it (getData sets none on a missing node). */
export function watchDataStart(client: ZkClient, path: string, watcher: (event: zookeeper.Event) => void): Start<boolean> {
  const watching = watchStatStart(client, path, watcher);
  return (done) => watching((error, stat) => (error ? done(error) : done(null, stat !== null)));
}

/**
 * Reads a node's stat and, if it exists, leaves a data watch on it (fired by its deletion or a change of
 * its data, not by its children). Null if the node does not exist (no watch is left then).
 */
export function watchStatStart(client: ZkClient, path: string, watcher: (event: zookeeper.Event) => void): Start<ZkStat | null> {
  return (done) => {
    const answered = (error: unknown, found?: { stat: ZkStat }): void => {
      if (error === null || error === undefined) done(null, found!.stat);
      else if (isCode(error, zookeeper.Exception.NO_NODE)) done(null, null);
      else done(error);
    };
    const queue = directQueue(client);
    if (queue !== undefined) watchDataDirect(queue, path, watcher, answered);
    else client.getData(path, watcher, (error, _data, stat) => answered(error, { stat }));
  };
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
  const manager = (client as unknown as { connectionManager?: { watcherManager?: { dataWatchers?: unknown } } }).connectionManager;
  const watchers = manager?.watcherManager?.dataWatchers;
  return watchers !== null && typeof watchers === 'object' ? (watchers as Record<string, WatcherEmitter | undefined>) : undefined;
}

/** Promise adapters; requests are queued in call order, so two calls made back to back are pipelined. */
export function create(client: ZkClient, path: string, mode: number, data: Buffer = Buffer.alloc(0), acl = OPEN): Promise<string> {
  return started(createStart(client, path, mode, data, acl));
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
  return started(getChildrenStart(client, path));
}

export function exists(client: ZkClient, path: string): Promise<ZkStat | null> {
  return started(existsStart(client, path));
}

export function remove(client: ZkClient, path: string): Promise<void> {
  return started(removeStart(client, path));
}

/** @internal For tests: runs after each look for the deepest existing ancestor, before the creates below it. */
export const mkdirpHooks: { afterLook?: ((deepest: string) => Promise<void>) | undefined } = {};

/** How many times `mkdirp` looks for the deepest existing ancestor before it gives up on NO_NODE. */
export const MKDIRP_LOOKS = 5;

/**
 * Creates `path` and whatever ancestors are missing, with `acl`. It looks for the deepest ancestor that
 * exists first: creating an existing node still needs create rights on its parent, which a shared
 * server may deny above the namespace (the client's own mkdirp creates from the root down).
 */
export async function mkdirp(client: ZkClient, path: string, acl = OPEN): Promise<void> {
  const parts = path.split('/').filter((part) => part !== '');
  const at = (depth: number): string => `/${parts.slice(0, depth).join('/')}`;
  // An ancestor found may be deleted before its child is created in it (an empty queue directory is
  // renewed, see the driver's `#recycle`): look again from the top, a few times.
  for (let attempt = 0; ; attempt += 1) {
    let existing = parts.length;
    while (existing > 0 && (await exists(client, at(existing))) === null) existing -= 1;
    if (mkdirpHooks.afterLook !== undefined) await mkdirpHooks.afterLook(at(existing));
    try {
      for (let depth = existing + 1; depth <= parts.length; depth += 1) {
        try {
          await create(client, at(depth), zookeeper.CreateMode.PERSISTENT, undefined, acl);
        } catch (error) {
          if (!isCode(error, zookeeper.Exception.NODE_EXISTS)) throw error; // created meanwhile by another client
        }
      }
      return;
    } catch (error) {
      if (!isCode(error, zookeeper.Exception.NO_NODE) || attempt >= MKDIRP_LOOKS - 1) throw error;
    }
  }
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

const CORKED = Symbol('corked until the end of this turn');
type CorkableSocket = { cork(): void; uncork(): void; [CORKED]?: boolean };

function uncorkNow(socket: CorkableSocket): void {
  socket[CORKED] = false;
  socket.uncork();
}

/**
 * Corks the client's socket until the current turn of the event loop has run its callbacks and
 * promise reactions: every request made meanwhile (many locks on one session answer in one read and
 * ask again in one turn) leaves in one write instead of a system call each. A write costs more CPU
 * than encoding the request; the requests wait microseconds at most.
 */
export function corkForTick(client: ZkClient): void {
  const socket: CorkableSocket | undefined = socketOf(client);
  if (socket === undefined || socket[CORKED] === true) return;
  socket[CORKED] = true;
  socket.cork();
  process.nextTick(uncorkNow, socket);
}

/** Reads the node and, only if it exists, leaves a watch on it (getData sets none on a missing node). */
export function watchData(client: ZkClient, path: string, watcher: (event: zookeeper.Event) => void): Promise<boolean> {
  return started(watchDataStart(client, path, watcher));
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

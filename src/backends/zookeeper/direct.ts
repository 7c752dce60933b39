import { createRequire } from 'node:module';
import type zookeeper from 'node-zookeeper-client';
import type { Done } from '../requests.js';
import { installedClientCompatible } from './jute.js';

/**
 * The hot requests (create, delete, a listing without a watch, the read that watches a blocker) handed
 * to the client's connection manager as the client's own methods hand them, without what those methods
 * wrap around every call: argument shuffling, an `async.whilst` loop with a results table for retries
 * that a client made with `retries: 0` never takes. The same records are queued, with the same headers,
 * the same chroot handling (the connection manager does it), the same errors, and the same values given
 * back; a watched read registers its watcher with the connection manager once it succeeded, as the
 * client's `getData` does.
 */

interface Queue {
  queue(request: object, callback: (error: unknown, response: { payload: Record<string, unknown> }) => void): void;
  registerDataWatcher(path: string, watcher: (event: zookeeper.Event) => void): void;
}
type RecordOf = new () => Record<string, unknown>;
interface Layer {
  Request: new (header: object, payload: object) => object;
  protocol: Record<'RequestHeader' | 'CreateRequest' | 'CreateResponse' | 'DeleteRequest' | 'GetChildren2Request' | 'GetDataRequest', RecordOf>;
  OP_CODES: Record<'CREATE' | 'DELETE' | 'GET_CHILDREN2' | 'GET_DATA' | 'SYNC', number>;
}

const require = createRequire(import.meta.url);
const jute = require('node-zookeeper-client/lib/jute/index.js') as Layer;
const { validate } = require('node-zookeeper-client/lib/Path.js') as { validate(path: string): void };
/** The connection manager's contract relied on here is the one of the 1.1 releases, the one checked. */
const COMPATIBLE = installedClientCompatible();
/** The client refuses larger data (an assertion of its `create`); such a create goes through it. */
const DATA_SIZE_LIMIT = 1_048_576;

/**
 * The client's connection manager, when requests can be handed to it directly: a client of the 1.1
 * releases (whose connection manager's contract this follows), made without retries. Any other takes
 * the client's own methods.
 */
export function directQueue(client: zookeeper.Client): Queue | undefined {
  if (!COMPATIBLE) return undefined;
  const { connectionManager, options } = client as unknown as { connectionManager?: Partial<Queue>; options?: { retries?: unknown } };
  return typeof connectionManager?.queue === 'function' && typeof connectionManager.registerDataWatcher === 'function' && options?.retries === 0
    ? (connectionManager as Queue)
    : undefined;
}

function request(type: number, payload: object): object {
  const header = new jute.protocol.RequestHeader();
  header['type'] = type;
  return new jute.Request(header, payload);
}

/** The records of an ACL list, made once per list (the client makes them on every create). */
const aclRecords = new WeakMap<readonly zookeeper.ACL[], unknown[]>();
function recordsOf(acl: readonly zookeeper.ACL[]): unknown[] {
  let records = aclRecords.get(acl);
  if (records === undefined) aclRecords.set(acl, (records = acl.map((item) => (item as unknown as { toRecord(): unknown }).toRecord())));
  return records;
}

/** False when the client's own method must take this create (data it refuses, no ACL). */
export function createsDirectly(data: Buffer, acl: readonly zookeeper.ACL[]): boolean {
  return data.length <= DATA_SIZE_LIMIT && acl.length > 0;
}

export function createDirect(queue: Queue, path: string, data: Buffer, acl: readonly zookeeper.ACL[], mode: number, done: Done<string>): void {
  validate(path);
  const payload = new jute.protocol.CreateRequest();
  payload['path'] = path;
  payload['acl'] = recordsOf(acl);
  payload['flags'] = mode;
  payload['data'] = data; // written as it is when the request is sent; nobody changes it meanwhile
  queue.queue(request(jute.OP_CODES.CREATE, payload), (error, response) => (error ? done(error) : done(null, response.payload['path'] as string)));
}

export function removeDirect(queue: Queue, path: string, done: Done<void>): void {
  validate(path);
  const payload = new jute.protocol.DeleteRequest();
  payload['path'] = path;
  payload['version'] = -1;
  queue.queue(request(jute.OP_CODES.DELETE, payload), (error) => done(error));
}

export function getChildrenDirect(queue: Queue, path: string, done: Done<{ children: string[]; stat: zookeeper.Stat }>): void {
  validate(path);
  const payload = new jute.protocol.GetChildren2Request();
  payload['path'] = path;
  payload['watch'] = false;
  queue.queue(request(jute.OP_CODES.GET_CHILDREN2, payload), (error, response) =>
    error ? done(error) : done(null, { children: response.payload['children'] as string[], stat: response.payload['stat'] as zookeeper.Stat }),
  );
}

/** Reads the node with a watch; the watcher is registered only if the read succeeded (a node that exists). */
export function watchDataDirect(queue: Queue, path: string, watcher: (event: zookeeper.Event) => void, done: Done<{ data: Buffer; stat: zookeeper.Stat }>): void {
  validate(path);
  const payload = new jute.protocol.GetDataRequest();
  payload['path'] = path;
  payload['watch'] = true;
  queue.queue(request(jute.OP_CODES.GET_DATA, payload), (error, response) => {
    if (error) return done(error);
    queue.registerDataWatcher(path, watcher);
    done(null, { data: response.payload['data'] as Buffer, stat: response.payload['stat'] as zookeeper.Stat });
  });
}

/**
 * ZooKeeper's `sync`: answered only once the member that serves this connection has caught up with the
 * leader, so never by a follower cut off from it. node-zookeeper-client has no such method, and its
 * reply reader drops the connection on a reply to a request type it does not know. A sync request is
 * a path, and so is its reply, exactly as a create's reply is: this request goes on the wire as a sync
 * and is filed, for its reply, as a create (the connection manager reads a reply by the type of the
 * request it answers, which it looks at only when it numbers the request and when the reply comes).
 */
export function syncDirect(queue: Queue, path: string, done: Done<void>): void {
  validate(path);
  const header = new jute.protocol.RequestHeader();
  header['type'] = jute.OP_CODES.CREATE;
  const payload = new jute.protocol.CreateResponse(); // one field, the path: a SyncRequest's layout
  payload['path'] = path;
  const sync = new jute.Request(header, payload) as { toBuffer(): Buffer };
  const toBuffer = sync.toBuffer;
  sync.toBuffer = function (this: unknown): Buffer {
    header['type'] = jute.OP_CODES.SYNC;
    try {
      return toBuffer.call(this);
    } finally {
      header['type'] = jute.OP_CODES.CREATE;
    }
  };
  queue.queue(sync, (error) => done(error));
}

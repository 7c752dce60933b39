import { createRequire } from 'node:module';

import type zookeeper from 'node-zookeeper-client';

import type { Done } from '../../requests.js';
import { encodeRequest, type Records } from './jute.js';

/**
 * The hot requests (create, a create answered with its stat, delete, a listing without a watch, the read that watches a blocker, and
 * sync) handed to the client's connection manager as the client's own methods hand them, without what
 * those methods wrap around every call: argument shuffling, an `async.whilst` loop with a results table
 * for retries that a client made with `retries: 0` never takes. Their records are baton's compiled ones
 * (jute.ts), each request encoded by baton's encoder (set on that request object alone); the headers,
 * the chroot handling (the connection manager does it), the errors and the values given back are the
 * client's. A watched read registers its watcher with the connection manager once it succeeded, as the
 * client's `getData` does. Only for a client whose replies baton reads (replies.ts): it reads a sync's.
 */

interface Queue {
  queue(request: object, callback: (error: unknown, response: { payload: Record<string, unknown> }) => void): void;
  registerDataWatcher(path: string, watcher: (event: zookeeper.Event) => void): void;
}
type RecordOf = new () => Record<string, unknown>;
interface Layer {
  Request: new (header: object, payload: object | null) => { toBuffer(): Buffer };
  OP_CODES: Record<'CREATE' | 'DELETE' | 'GET_CHILDREN2' | 'GET_DATA' | 'SYNC', number>;
}

const require = createRequire(import.meta.url);
const jute = require('node-zookeeper-client/lib/jute/index.js') as Layer;
const { validate } = require('node-zookeeper-client/lib/Path.js') as { validate(path: string): void };
/** The client refuses larger data (an assertion of its `create`); such a create goes through it. */
const DATA_SIZE_LIMIT = 1_048_576;

/** The clients whose requests may go straight to their connection manager, with the records to use. */
const direct = new WeakMap<zookeeper.Client, { queue: Queue; records: Records }>();

/**
 * Lets baton hand `client`'s hot requests to its connection manager: a client of the 1.1 releases
 * (whose connection manager's contract this follows; `records` are compiled only for those), made
 * without retries, whose replies baton reads. Otherwise it keeps using the client's own methods.
 */
export function sendDirectly(client: zookeeper.Client, records: Records): void {
  const { connectionManager, options } = client as unknown as {
    connectionManager?: Partial<Queue>;
    options?: { retries?: unknown };
  };
  if (
    typeof connectionManager?.queue !== 'function' ||
    typeof connectionManager.registerDataWatcher !== 'function' ||
    options?.retries !== 0
  )
    return;
  direct.set(client, { queue: connectionManager as Queue, records });
}

/** Where `client`'s hot requests go directly, if they do (see `sendDirectly`). */
export function directQueue(client: zookeeper.Client): { queue: Queue; records: Records } | undefined {
  return direct.get(client);
}

type Direct = { queue: Queue; records: Records };

/**
 * A request of baton's: of the client's class (its connection manager checks that), encoded by baton's
 * encoder. A subclass of the client's `Request`, made by baton, so that the client's class stays as it
 * is, and so that all of baton's requests have one shape.
 */
class DirectRequest extends jute.Request {
  override toBuffer(): Buffer {
    return encodeRequest.call(this as unknown as ThisParameterType<typeof encodeRequest>);
  }
}

function request({ records }: Direct, type: number, payload: object | null): object {
  const header = new records.protocol['RequestHeader']!() as Record<string, unknown>;
  header['type'] = type;
  return new DirectRequest(header, payload);
}

/** The records of an ACL list, baton's compiled ones, made once per list (the client makes them on every create). */
const aclRecords = new WeakMap<readonly zookeeper.ACL[], unknown[]>();
function recordsOf({ records }: Direct, acl: readonly zookeeper.ACL[]): unknown[] {
  let made = aclRecords.get(acl);
  if (made === undefined) {
    const [ACL, Id] = [records.data['ACL']!, records.data['Id']!];
    // The fields the client's own `ACL#toRecord` reads.
    const fields = (item: zookeeper.ACL) =>
      item as unknown as { permission: number; id: { scheme: string; id: string } };
    made = acl.map((item) => new ACL(fields(item).permission, new Id(fields(item).id.scheme, fields(item).id.id)));
    aclRecords.set(acl, made);
  }
  return made;
}

/** The CreateRequest of a create or a CREATE2 (the same record; only the op code differs). */
function createPayload(
  to: Direct,
  path: string,
  data: Buffer,
  acl: readonly zookeeper.ACL[],
  mode: number,
): Record<string, unknown> {
  validate(path);
  const payload = payloadOf(to, 'CreateRequest');
  payload['path'] = path;
  payload['acl'] = recordsOf(to, acl);
  payload['flags'] = mode;
  payload['data'] = data; // written as it is when the request is sent; nobody changes it meanwhile
  return payload;
}

/** False when the client's own method must take this create (data it refuses, no ACL). */
export function createsDirectly(data: Buffer, acl: readonly zookeeper.ACL[]): boolean {
  return data.length <= DATA_SIZE_LIMIT && acl.length > 0;
}

function payloadOf({ records }: Direct, name: string): Record<string, unknown> {
  return new (records.protocol[name] as unknown as RecordOf)();
}

export function createDirect(
  to: Direct,
  path: string,
  data: Buffer,
  acl: readonly zookeeper.ACL[],
  mode: number,
  done: Done<string>,
): void {
  to.queue.queue(request(to, jute.OP_CODES.CREATE, createPayload(to, path, data, acl, mode)), (error, response) =>
    error ? done(error) : done(null, response.payload['path'] as string),
  );
}

/** ZooKeeper 3.5's create that answers with the new node's stat as well as its path (node-zookeeper-client 1.1 has no code for it). */
export const CREATE2 = 15;

/**
 * A create answered with the node's path and stat (CREATE2): the stat's czxid is the entry's fencing
 * token, at no request more. The request is a CreateRequest, as for a create; baton's reader reads the
 * reply (replies.ts).
 */
export function create2Direct(
  to: Direct,
  path: string,
  data: Buffer,
  acl: readonly zookeeper.ACL[],
  mode: number,
  done: Done<{ path: string; stat: zookeeper.Stat }>,
): void {
  to.queue.queue(request(to, CREATE2, createPayload(to, path, data, acl, mode)), (error, response) =>
    error
      ? done(error)
      : done(null, { path: response.payload['path'] as string, stat: response.payload['stat'] as zookeeper.Stat }),
  );
}

export function removeDirect(to: Direct, path: string, done: Done<void>): void {
  validate(path);
  const payload = payloadOf(to, 'DeleteRequest');
  payload['path'] = path;
  payload['version'] = -1;
  to.queue.queue(request(to, jute.OP_CODES.DELETE, payload), (error) => done(error));
}

export function getChildrenDirect(
  to: Direct,
  path: string,
  done: Done<{ children: string[]; stat: zookeeper.Stat }>,
): void {
  validate(path);
  const payload = payloadOf(to, 'GetChildren2Request');
  payload['path'] = path;
  payload['watch'] = false;
  to.queue.queue(request(to, jute.OP_CODES.GET_CHILDREN2, payload), (error, response) =>
    error
      ? done(error)
      : done(null, {
          children: response.payload['children'] as string[],
          stat: response.payload['stat'] as zookeeper.Stat,
        }),
  );
}

/** Reads the node with a watch; the watcher is registered only if the read succeeded (a node that exists). */
export function watchDataDirect(
  to: Direct,
  path: string,
  watcher: (event: zookeeper.Event) => void,
  done: Done<{ data: Buffer; stat: zookeeper.Stat }>,
): void {
  validate(path);
  const payload = payloadOf(to, 'GetDataRequest');
  payload['path'] = path;
  payload['watch'] = true;
  to.queue.queue(request(to, jute.OP_CODES.GET_DATA, payload), (error, response) => {
    if (error) return done(error);
    to.queue.registerDataWatcher(path, watcher);
    done(null, { data: response.payload['data'] as Buffer, stat: response.payload['stat'] as zookeeper.Stat });
  });
}

/**
 * ZooKeeper's `sync`: answered only once the member that serves this connection has caught up with the
 * leader, so never by a follower cut off from it. node-zookeeper-client has no such method; its
 * request is a path (a CreateResponse's layout, the record used for it), and so is its reply, which
 * baton's reader reads (replies.ts).
 */
export function syncDirect(to: Direct, path: string, done: Done<void>): void {
  validate(path);
  const payload = payloadOf(to, 'CreateResponse');
  payload['path'] = path;
  to.queue.queue(request(to, jute.OP_CODES.SYNC, payload), (error) => done(error));
}

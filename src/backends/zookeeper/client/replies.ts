import { createRequire } from 'node:module';

import zookeeper from 'node-zookeeper-client';

import { BackendError } from '../../../../recipes/errors.js';
import { CREATE2 } from './direct.js';
import { blank, type Records } from './jute.js';

/**
 * baton's reader of its own client's replies, in place of the connection manager's (on that one
 * instance only: the client's module, classes and other clients stay as they are). It reads as the
 * reader of the client's 1.1 releases does, but:
 * - records are baton's compiled ones (jute.ts), made without defaults for the read;
 * - a reply with an error code the client does not know fails its request with an error of the
 *   client's class carrying that code, where the client's reader throws out of the socket's data
 *   handler and ends the process (a server newer than the client answers with such codes in races);
 * - replies to a SYNC (its payload is a path) and to a CREATE2 (a path and the new node's stat)
 *   are read: the client has neither request and drops the connection on a reply to a request
 *   type it does not know;
 * - a reply shorter than its record fails its request, where the client's reader throws out of the
 *   socket's data handler;
 * - a reply out of step (another id than the oldest request's, or none in flight) drops the connection
 *   as the client does, but leaves that request in flight, so that it fails with the connection instead
 *   of waiting for ever; so does a reply to a request type it cannot read;
 * - the frames of one chunk are read in a loop, and what is left stays pending while each is handled,
 *   so that a callback that throws loses none of the replies after it (the client recurses, and loses
 *   them).
 */

interface Reply {
  xid: number;
  zxid: Buffer;
  err: number;
}
type RecordLike = Record<string, unknown> & {
  deserialize(buffer: Buffer, offset: number): number;
  setChrootPath(path: string): void;
};
interface Pending {
  request: { header: { xid: number; type: number } };
  callback?: (error: unknown, response?: unknown) => void;
}
interface Manager {
  state: number;
  pendingBuffer: Buffer | null;
  pendingQueue: Pending[];
  chrootPath?: string;
  zxid: unknown;
  sessionId: unknown;
  sessionPassword: unknown;
  serverAttempts: number;
  pingTimeout: number;
  socket: { destroyed: boolean; destroy(): void; setTimeout(ms: number, listener: () => void): void };
  watcherManager: { emit(event: unknown): void };
  onSocketData(buffer: Buffer): void;
  onSocketTimeout(): void;
  onPacketQueueReadable(): void;
  setState(state: number): void;
  updateTimeout(timeout: number): void;
}
interface Layer {
  OP_CODES: Record<string, number>;
  XID_PING: number;
  XID_AUTHENTICATION: number;
  XID_NOTIFICATION: number;
  Response: new (header: unknown, payload: unknown) => unknown;
  TransactionResponse: new () => unknown;
}

const require = createRequire(import.meta.url);
const jute = require('node-zookeeper-client/lib/jute/index.js') as Layer;
const { STATES } = require('node-zookeeper-client/lib/ConnectionManager.js') as { STATES: Record<string, number> };
const { OP_CODES } = jute;

type Make = (records: Records) => RecordLike | null;
/** A compiled reply record `name`, made for a read. */
const reply =
  (name: string): Make =>
  (records) =>
    blank(records.protocol[name]!) as unknown as RecordLike;
const bare: Make = () => null;

/**
 * The reply to a CREATE2 (ZooKeeper 3.5+, a code the client does not know): a path, then the new node's
 * stat. Read as the client's CreateResponse (the chroot comes off the path) followed by its Stat.
 */
const created2: Make = (records) => {
  const path = blank(records.protocol['CreateResponse']!) as unknown as RecordLike;
  const reply = {
    path: undefined as unknown,
    stat: undefined as unknown,
    setChrootPath(chroot: string): void {
      path.setChrootPath(chroot);
    },
    deserialize(buffer: Buffer, offset: number): number {
      const read = path.deserialize(buffer, offset);
      const stat = blank(records.data['Stat']!) as unknown as RecordLike;
      const total = read + stat.deserialize(buffer, offset + read);
      reply.path = path['path'];
      reply.stat = stat;
      return total;
    },
  };
  return reply;
};

/** The reply record of each request type, made for a read: null for those whose reply is bare. */
const PAYLOADS = new Map<number, Make>([
  [OP_CODES['CREATE']!, reply('CreateResponse')],
  [OP_CODES['DELETE']!, bare],
  [OP_CODES['GET_CHILDREN2']!, reply('GetChildren2Response')],
  [OP_CODES['EXISTS']!, reply('ExistsResponse')],
  [OP_CODES['SET_DATA']!, reply('SetDataResponse')],
  [OP_CODES['GET_DATA']!, reply('GetDataResponse')],
  [OP_CODES['SET_ACL']!, reply('SetACLResponse')],
  [OP_CODES['GET_ACL']!, reply('GetACLResponse')],
  [OP_CODES['SET_WATCHES']!, bare],
  [OP_CODES['CLOSE_SESSION']!, bare],
  // The client's own reader of a transaction's results (it reads their records with the client's classes).
  [OP_CODES['MULTI']!, () => new jute.TransactionResponse() as RecordLike],
  [CREATE2, created2],
  // One path, as a CreateResponse: the layout of ZooKeeper's SyncResponse.
  [OP_CODES['SYNC']!, reply('CreateResponse')],
]);

/** Reads `client`'s replies with baton's reader. False (nothing changed) for a manager of another shape. */
export function readRepliesWith(client: zookeeper.Client, records: Records): boolean {
  const manager = (client as unknown as { connectionManager?: Partial<Manager> }).connectionManager;
  if (manager === undefined || typeof manager.onSocketData !== 'function' || !Array.isArray(manager.pendingQueue))
    return false;
  // The manager binds `onSocketData` to each socket it makes: set before it connects, this one is bound.
  manager.onSocketData = function (this: Manager, data: Buffer): void {
    let buffer = this.pendingBuffer ? Buffer.concat([this.pendingBuffer, data]) : data;
    while (buffer.length >= 4) {
      const end = buffer.readInt32BE(0) + 4;
      if (end < 8) {
        this.pendingBuffer = null;
        this.socket.destroy(); // no frame is that short: out of step, so reconnect
        return;
      }
      if (buffer.length < end) break;
      const frame = buffer.subarray(0, end);
      buffer = buffer.subarray(end);
      // Pending while the frame is handled: a callback that throws leaves the rest to the next chunk.
      this.pendingBuffer = buffer.length > 0 ? buffer : null;
      if (!handle(this, frame, records) || this.socket.destroyed) {
        this.pendingBuffer = null; // the connection is being dropped, the rest with it
        return;
      }
    }
    this.pendingBuffer = buffer.length > 0 ? buffer : null;
  };
  return true;
}

/** Handles one frame (its length first); false when it made the connection drop. */
function handle(manager: Manager, buffer: Buffer, records: Records): boolean {
  if (manager.state === STATES['CONNECTING']) {
    connected(manager, buffer, records);
    return true;
  }
  const header = blank(records.protocol['ReplyHeader']!) as unknown as Reply & RecordLike;
  const offset = 4 + header.deserialize(buffer, 4);
  switch (header.xid) {
    case jute.XID_PING:
      return true;
    case jute.XID_AUTHENTICATION:
      if (header.err === zookeeper.Exception.AUTH_FAILED) manager.setState(STATES['AUTHENTICATION_FAILED']!);
      return true;
    case jute.XID_NOTIFICATION: {
      const event = blank(records.protocol['WatcherEvent']!) as unknown as RecordLike;
      if (manager.chrootPath) event.setChrootPath(manager.chrootPath);
      event.deserialize(buffer, offset);
      manager.watcherManager.emit(event);
      return true;
    }
  }
  return answer(manager, header, buffer, offset, records);
}

/** The reply to the oldest request in flight; false (the connection dropped) if it is not that one's. */
function answer(
  manager: Manager,
  header: Reply & RecordLike,
  buffer: Buffer,
  offset: number,
  records: Records,
): boolean {
  const pending = manager.pendingQueue[0];
  if (pending === undefined || pending.request.header.xid !== header.xid) {
    manager.socket.destroy(); // out of step, so reconnect: the request in flight fails with the connection
    return false;
  }
  if (header.zxid) manager.zxid = header.zxid;
  if (header.err !== 0) {
    manager.pendingQueue.shift();
    pending.callback?.(errorFor(header.err), new jute.Response(header, null));
    return true;
  }
  const make = PAYLOADS.get(pending.request.header.type);
  if (make === undefined) {
    manager.socket.destroy(); // a reply this reader cannot read: the request fails with the connection
    return false;
  }
  manager.pendingQueue.shift();
  const payload = make(records);
  if (payload !== null) {
    if (manager.chrootPath) payload.setChrootPath(manager.chrootPath);
    try {
      payload.deserialize(buffer, offset);
    } catch (error) {
      // Shorter than its record: the frame is whole, so the stream is still in step; that request fails, not the process.
      pending.callback?.(unreadable(pending.request.header.type, error));
      return true;
    }
  }
  pending.callback?.(null, new jute.Response(header, payload));
  return true;
}

function unreadable(type: number, cause: unknown): Error {
  if (type === CREATE2)
    return new BackendError(
      "ZooKeeper answered a create without the new node's stat: baton needs ZooKeeper 3.5 or later",
      { cause },
    );
  return new BackendError(`ZooKeeper's reply to a request of type ${type} is shorter than its record`, { cause });
}

/** The answer to the connect request: the session's id, password and timeout, or its expiry. */
function connected(manager: Manager, buffer: Buffer, records: Records): void {
  const response = blank(records.protocol['ConnectResponse']!) as unknown as RecordLike & {
    timeOut: number;
    sessionId: unknown;
    passwd: unknown;
  };
  response.deserialize(buffer, 4);
  if (response.timeOut <= 0) {
    manager.setState(STATES['SESSION_EXPIRED']!);
    return;
  }
  manager.serverAttempts = 0;
  manager.sessionId = response.sessionId;
  manager.sessionPassword = response.passwd;
  manager.updateTimeout(response.timeOut);
  manager.setState(STATES['CONNECTED']!);
  manager.onPacketQueueReadable();
  manager.socket.setTimeout(manager.pingTimeout, manager.onSocketTimeout.bind(manager));
}

const KNOWN = new Set(Object.values(zookeeper.Exception).filter((value): value is number => typeof value === 'number'));

/**
 * The client's error for a code it knows; for any other, an error of the client's class with the code
 * and the server's name for it, which `zkCode` reads like any other.
 */
export function errorFor(code: number, names: ReadonlyMap<number, string> = SERVER_NAMES): zookeeper.Exception {
  if (KNOWN.has(code))
    return (zookeeper.Exception as unknown as { create(code: number): zookeeper.Exception }).create(code);
  const error = Object.create(zookeeper.Exception.prototype) as zookeeper.Exception & {
    code: number;
    name: string;
    path: undefined;
    message: string;
  };
  Error.captureStackTrace(error, errorFor);
  error.code = code;
  error.name = names.get(code) ?? 'UNKNOWN';
  error.path = undefined;
  error.message = `Exception: ${error.name}[${code}]`;
  return error;
}

let SERVER_NAMES: ReadonlyMap<number, string> = new Map();
/** The names of the server's codes the client does not know (set by client.ts, which lists them). */
export function nameServerCodes(codes: Record<string, number>): void {
  SERVER_NAMES = new Map(Object.entries(codes).map(([name, code]) => [code, name]));
}

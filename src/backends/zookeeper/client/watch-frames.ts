/**
 * The watches a new connection sets again, in frames the server accepts. node-zookeeper-client sends
 * every watch of the session in one SetWatches request; a server refuses a request over its
 * jute.maxbuffer (1 MB by default) by closing the connection, so a session watching some 12,000 paths
 * was cut at every reconnect until it was lost. ZooKeeper's Java client splits them (ZOOKEEPER-706).
 */
import type { ZkClient } from '../client.js';
import { aroundConnect } from './instance.js';

/** The paths' bytes per SetWatches frame, as ZooKeeper's Java client: far below the server's 1 MB default. */
export const SET_WATCHES_FRAME_BYTES = 128 * 1024;
/** The protocol's op code of SetWatches. */
const SET_WATCHES = 101;

const LISTS = ['dataWatches', 'existWatches', 'childWatches'] as const;
type Lists = Record<(typeof LISTS)[number], string[]>;
interface SetWatchesPayload extends Lists {
  chrootPath?: string;
}
interface Packet {
  request: { header: { type?: unknown } | null; payload: unknown };
  callback: unknown;
}

/**
 * Each new connection of `client` sets its watches again in frames of at most about
 * `SET_WATCHES_FRAME_BYTES` of paths (one path over that goes alone), in the place of the client's one
 * frame, in the same place in the queue.
 */
export function splitSetWatches(client: ZkClient, frameBytes = SET_WATCHES_FRAME_BYTES): void {
  aroundConnect(client, (manager, connect) => {
    connect();
    const queue = manager.packetQueue?.queue;
    if (!Array.isArray(queue)) return;
    const at = queue.findIndex(isSetWatches);
    if (at === -1) return;
    const packet = queue[at] as Packet;
    const batches = batchesOf(packet.request.payload as SetWatchesPayload, frameBytes);
    if (batches.length > 1) queue.splice(at, 1, ...batches.map((lists) => packetWith(packet, lists)));
  });
}

function isSetWatches(packet: unknown): boolean {
  const request = (packet as Partial<Packet> | null)?.request;
  const payload = request?.payload as Partial<SetWatchesPayload> | null | undefined;
  return request?.header?.type === SET_WATCHES && LISTS.every((list) => Array.isArray(payload?.[list]));
}

/** The paths of `payload`, in order, cut into lists of at most about `frameBytes` each (as sent: chroot and length prefix). */
function batchesOf(payload: SetWatchesPayload, frameBytes: number): Lists[] {
  const extra = Buffer.byteLength(payload.chrootPath ?? '') + 4;
  const batches: Lists[] = [];
  let batch = emptyLists();
  let bytes = 0;
  for (const list of LISTS) {
    for (const path of payload[list]) {
      const size = Buffer.byteLength(path) + extra;
      if (bytes > 0 && bytes + size > frameBytes) {
        batches.push(batch);
        [batch, bytes] = [emptyLists(), 0];
      }
      batch[list].push(path);
      bytes += size;
    }
  }
  if (bytes > 0) batches.push(batch);
  return batches;
}

function emptyLists(): Lists {
  return { dataWatches: [], existWatches: [], childWatches: [] };
}

/**
 * A copy of the client's SetWatches packet (its request, header and payload of the client's own
 * classes, so that it encodes them and reads their replies as its own) carrying only `lists`. Each
 * frame gets a header of its own: the client numbers each request in its header as it sends it.
 */
function packetWith(packet: Packet, lists: Lists): Packet {
  const { request } = packet;
  return {
    request: copyOf(request, { header: copyOf(request.header, {}), payload: copyOf(request.payload, lists) }),
    callback: packet.callback,
  };
}

function copyOf<T>(value: T, changes: object): T {
  return Object.assign(Object.create(Object.getPrototypeOf(value) as object | null) as T & object, value, changes);
}

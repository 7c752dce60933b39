/**
 * The ZooKeeper request pipeline: how baton's requests leave the client's socket. Requests made in one
 * turn leave in one write, and request ids wrap before they overflow (see `requestIdWrap`).
 */
import type { ZkClient } from '../client.js';
import { requestIdWrap } from './instance.js';

/** The client's current socket (node-zookeeper-client keeps it private; a new one after a reconnect). */
function socketOf(client: ZkClient): { cork(): void; uncork(): void } | undefined {
  return (client as unknown as { connectionManager?: { socket?: { cork(): void; uncork(): void } } }).connectionManager
    ?.socket;
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

/**
 * What runs before each request of a driver: ids that cannot overflow, and the cork when others are in
 * flight. A request sent while nothing else is (a lone request: one lock's next step) leaves at once;
 * otherwise the socket is corked for the rest of the turn, since replies to the requests in flight
 * tend to arrive together and each asks again in the same turn (many locks on one session), and their
 * requests then leave in one write. Deferring a lone request's write to the end of the turn gains
 * nothing and delays it.
 */
export function requestPreparer(client: ZkClient, inFlight: () => number): () => void {
  const wrapIds = requestIdWrap(client);
  return () => {
    wrapIds();
    if (inFlight() > 0) corkForTick(client);
  };
}

import net from 'node:net';

import { zkCounters, zkProbeOf, type ZkView } from 'baton-locks/testing';
import zookeeper from 'node-zookeeper-client';
import { afterAll, beforeAll, inject } from 'vitest';

import type { Session } from '../../../recipes/contract.js';
import { GUARDED_VALUE } from '../../../src/backends/zookeeper/guarded.js';
import { zkRemoveTree, zkTree, zkWatchesUnder } from '../servers/clean.js';
import { fourLetterWord, zkMode } from '../servers/four-letter.js';
import type { Fixture } from './fixture.js';

export interface ZkInfo {
  readonly connectString: string;
  readonly ports: number[];
  readonly sessionTimeoutMs: number;
}

/** The contract fixture for a ZooKeeper deployment the global setup started (or the user pointed at). */
export function zkFixture(which: 'zkStandalone' | 'zkEnsemble'): Fixture {
  return zkFixtureOf(
    inject(which),
    which === 'zkStandalone' ? 'ZooKeeper (standalone)' : 'ZooKeeper (3-node ensemble)',
  );
}

/** The same fixture for any ZooKeeper deployment, e.g. one a fault test started for itself to kill. */
export function zkFixtureOf(info: ZkInfo, name: string): Fixture {
  return {
    name,
    url: (namespace) => `zk://${info.connectString}/${namespace}`,
    options: { sessionTimeoutMs: info.sessionTimeoutMs },
    entries: async (namespace) =>
      (await zkTree(info.connectString, `/${namespace}`))
        // Guarded values too (persistent: they outlive their writer, so one left behind is a leak).
        .filter((node) => node.ephemeralOwner !== 0n || GUARDED_VALUE.test(node.path))
        .map((node) => node.path),
    watched: (namespace) => zkWatchesUnder(info.ports, `/${namespace}`),
    notifications: () => zkCounters.notifications,
    expire: (session) => expireZkSession(info, session),
    removeEntry: (key) => zkRemoveTree(info.connectString, key),
    cleanup: (namespace) => zkRemoveTree(info.connectString, `/${namespace}`),
    liveSessions: async (ids) => {
      const live: string[] = [];
      for (const id of ids) if (await sessionAlive(info.ports, `0x${BigInt(`0x${id}`).toString(16)}`)) live.push(id);
      return live;
    },
    crossProcess: true,
    laggingReads: info.ports.length > 1,
    // The client notices the expiry when it reconnects, within a session timeout or two.
    lossDeadlineMs: info.sessionTimeoutMs * 3,
  };
}

/**
 * Ends a session from the server side: a second connection with the same id and password closes it.
 * The original client may win the session back by reconnecting in between, so the close is repeated
 * until the server answers it, and the leader's session tracker no longer lists the session.
 */
export async function expireZkSession(info: ZkInfo, session: Session): Promise<void> {
  const id = `0x${BigInt(`0x${session.id}`).toString(16)}`;
  const credentials = zkProbeOf(session).view;
  // Long enough for an ensemble to elect a leader when a fault test has killed one.
  const giveUpAt = Date.now() + info.sessionTimeoutMs * 10;
  for (let attempt = 0; Date.now() < giveUpAt; attempt += 1) {
    const outcome = await attachAndClose(info.connectString, credentials, session.timeoutMs, attempt);
    if (outcome === 'taken back') continue;
    if (outcome === 'unanswered') {
      // That member is down, or cannot serve (no quorum): the next one, after a pause.
      await new Promise((resolve) => setTimeout(resolve, 50));
      continue;
    }
    const gone = Date.now() + info.sessionTimeoutMs;
    while (Date.now() < gone) {
      if (!(await sessionAlive(info.ports, id))) return;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }
  throw new Error(`session ${id} survived every attempt to close it for ${info.sessionTimeoutMs * 10} ms`);
}

/**
 * Attaches to the session from a second connection and closes it, with both requests in one write:
 * the close is already waiting in the server's socket buffer when the attach completes. (A client
 * library would wait for the connect response first.) The attach makes the server drop the session's
 * own connection; its client reconnects at once and, when it gets there before the close, takes the
 * session back and drops this connection: 'taken back', try again. 'closed' when the server answered
 * the close, 'gone' when the session no longer existed, 'unanswered' when the member refused the
 * connection or hung up without a connect response.
 */
async function attachAndClose(
  connectString: string,
  credentials: ZkView,
  timeoutMs: number,
  attempt: number,
): Promise<'closed' | 'gone' | 'taken back' | 'unanswered'> {
  const hosts = connectString.split(',');
  const [host, port] = hosts[attempt % hosts.length]!.split(':') as [string, string];
  const { sessionId, sessionPassword } = credentials.sessionCredentials();
  const connect = Buffer.alloc(4 + 4 + 8 + 4 + 8 + 4 + sessionPassword.length + 1);
  let at = connect.writeInt32BE(connect.length - 4, 0);
  at = connect.writeInt32BE(0, at); // protocol version
  at = connect.writeBigInt64BE(0n, at); // last zxid seen
  at = connect.writeInt32BE(timeoutMs, at);
  at += sessionId.copy(connect, at);
  at = connect.writeInt32BE(sessionPassword.length, at);
  at += sessionPassword.copy(connect, at);
  connect.writeUInt8(0, at); // not read-only
  const close = Buffer.alloc(12);
  close.writeInt32BE(8, 0);
  close.writeInt32BE(CLOSE_XID, 4);
  close.writeInt32BE(-11, 8); // closeSession
  const answer = await new Promise<Buffer>((resolve) => {
    const received: Buffer[] = [];
    const socket = net.connect({ host, port: Number(port) }, () => socket.write(Buffer.concat([connect, close])));
    // The server hangs up once the session is closed, at once if it no longer exists, or when the
    // session's own client takes it back.
    const timer = setTimeout(() => socket.destroy(), 2_000);
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('error', () => undefined); // followed by 'close'
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(received));
    });
  });
  // The connect response: length, protocol version, granted timeout (0: no such session), ...
  if (answer.length < 12) return 'unanswered';
  if (answer.readInt32BE(8) === 0) return 'gone';
  const connectLength = answer.length >= 4 ? answer.readInt32BE(0) : Number.MAX_SAFE_INTEGER;
  // Then the close's reply: length, xid, zxid, error code.
  const reply = answer.subarray(4 + connectLength);
  return reply.length >= 20 && reply.readInt32BE(4) === CLOSE_XID && reply.readInt32BE(16) === 0
    ? 'closed'
    : 'taken back';
}
const CLOSE_XID = 1;

/** Whether the leader's (or standalone server's) session tracker still lists the session. */
async function sessionAlive(ports: readonly number[], id: string): Promise<boolean> {
  for (const port of ports) {
    const mode = await zkMode(port);
    if (mode !== 'leader' && mode !== 'standalone') continue;
    const dump = await fourLetterWord(port, 'dump');
    const tracker = dump.slice(0, dump.indexOf('ephemeral nodes dump'));
    return tracker.split('\n').some((line) => line.trim() === id);
  }
  return true;
}

/** A plain client for a test file's own checks and faults, open from beforeAll to afterAll. */
export function useZkAdmin(connectString: () => string): () => zookeeper.Client {
  let admin: zookeeper.Client | undefined;
  beforeAll(async () => {
    const client = zookeeper.createClient(connectString(), { sessionTimeout: 4_000 });
    await new Promise<void>((resolve) => {
      client.once('connected', () => resolve());
      client.connect();
    });
    admin = client;
  });
  afterAll(() => admin?.close());
  return () => {
    if (admin === undefined) throw new Error('the admin client is open only inside the tests');
    return admin;
  };
}

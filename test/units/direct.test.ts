import zookeeper from 'node-zookeeper-client';
import { afterEach, describe, expect, it } from 'vitest';

import type { Start } from '../../src/backends/requests.js';
import {
  aclFor,
  createEntryStart,
  createStart,
  getChildrenStart,
  reachLeaderStart,
  removeStart,
  watchDataStart,
} from '../../src/backends/zookeeper/client.js';
import { directQueue, sendDirectly } from '../../src/backends/zookeeper/client/direct.js';
import { compiledRecords } from '../../src/backends/zookeeper/client/jute.js';

// The hot requests are handed to node-zookeeper-client's connection manager directly (direct.ts). They
// must queue the very bytes the client's own methods queue, and give back what those methods give back,
// for every answer. A client that is never connected queues into a recorder here; nothing is sent.

type Callback = (error: unknown, response?: { payload: Record<string, unknown> }) => void;
interface Queued {
  readonly request: { toBuffer(): Buffer };
  readonly callback: Callback;
}

const clients: zookeeper.Client[] = [];
afterEach(() => {
  for (const client of clients.splice(0)) client.close();
});

/** A client whose connection manager records what is queued instead of sending it. */
function recordingClient(options: { retries?: number } = {}): { client: zookeeper.Client; queued: Queued[] } {
  const client = zookeeper.createClient('127.0.0.1:1', { sessionTimeout: 4_000, ...options });
  clients.push(client);
  const queued: Queued[] = [];
  const manager = (
    client as unknown as { connectionManager: { queue(request: Queued['request'], callback: Callback): void } }
  ).connectionManager;
  manager.queue = (request, callback) => {
    queued.push({ request, callback });
  };
  sendDirectly(client, compiledRecords()!); // as the driver does; refused for a client with retries
  return { client, queued };
}

/** What a request in callback form is told, once the recorded request is answered with `answer`. */
function outcome<T>(start: Start<T>, queued: Queued[], answer: (callback: Callback) => void): unknown[] {
  let told: unknown[] = [];
  start((...args) => (told = args));
  answer(queued.at(-1)!.callback);
  return told;
}

const stat = { czxid: Buffer.from([0, 0, 0, 0, 0, 0, 0, 9]), numChildren: 2 };
const watcher = (): void => undefined;

/** The paths the client holds a data watcher for (registered by a watched read that succeeded). */
function watchedPaths(client: zookeeper.Client): string[] {
  return (
    client as unknown as { connectionManager: { watcherManager: { getDataWatcherPaths(): string[] } } }
  ).connectionManager.watcherManager.getDataWatcherPaths();
}

describe('requests handed to the connection manager directly', () => {
  const cases: [string, (client: zookeeper.Client) => Start<unknown>, Record<string, unknown>][] = [
    [
      'create, open ACL, sequential',
      (c) => createStart(c, '/baton/q/_c_x-lock-', zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL),
      { path: '/baton/q/_c_x-lock-0000000007' },
    ],
    [
      'create with data and a creator ACL',
      (c) =>
        createStart(
          c,
          '/a/b',
          zookeeper.CreateMode.PERSISTENT,
          Buffer.from('candidate-7'),
          aclFor('creator-all-world-read'),
        ),
      { path: '/a/b' },
    ],
    [
      'create with empty data',
      (c) => createStart(c, '/a', zookeeper.CreateMode.EPHEMERAL, Buffer.alloc(0), aclFor('creator-only')),
      { path: '/a' },
    ],
    ['delete', (c) => removeStart(c, '/baton/q/_c_x-lock-0000000007'), {}],
    ['list', (c) => getChildrenStart(c, '/baton/q'), { children: ['_c_x-lock-0000000007', 'y'], stat }],
    [
      'watched read',
      (c) => watchDataStart(c, '/baton/q/_c_x-lock-0000000006', watcher),
      { data: Buffer.from('x'), stat },
    ],
  ];

  it.each(cases)('%s: the same bytes, the same answers as through the client', (_name, make, payload) => {
    const direct = recordingClient();
    const through = recordingClient({ retries: 1 }); // a client with retries goes through its own methods
    expect(directQueue(direct.client)).toBeDefined();
    expect(directQueue(through.client)).toBeUndefined();
    const [noNode, exists, lost] = [
      zookeeper.Exception.NO_NODE,
      zookeeper.Exception.NODE_EXISTS,
      zookeeper.Exception.CONNECTION_LOSS,
    ].map((code) =>
      (zookeeper.Exception as unknown as { create(code: number, path: string): Error }).create(code, '/baton/q'),
    );
    const answers: ((callback: Callback) => void)[] = [
      (callback) => callback(null, { payload }),
      (callback) => callback(undefined, { payload }),
      (callback) => callback(noNode),
      (callback) => callback(exists),
    ];

    for (const answer of answers) {
      const ours = outcome(make(direct.client), direct.queued, answer);
      // The client's own method: a retried connection loss aside, `retries` changes nothing it sends or gives back.
      const theirs = outcome(make(through.client), through.queued, answer);
      expect(direct.queued.at(-1)!.request.toBuffer()).toEqual(through.queued.at(-1)!.request.toBuffer());
      expect(ours).toEqual(theirs);
      expect(ours[0]).toBe(theirs[0]); // an error is handed on as it came, not copied
    }
    // A lost connection, which a client without retries hands back as it came (with retries it would try again).
    expect(outcome(make(direct.client), direct.queued, (callback) => callback(lost))).toEqual([lost]);
  });

  it('refuses a bad path as the client does, before anything is queued', () => {
    const { client, queued } = recordingClient();
    for (const make of [
      (c: zookeeper.Client) => createStart(c, 'relative', 0),
      (c: zookeeper.Client) => removeStart(c, '/trailing/'),
      (c: zookeeper.Client) => getChildrenStart(c, ''),
      (c: zookeeper.Client) => watchDataStart(c, 'x/', watcher),
    ]) {
      expect(() => make(client)(() => undefined)).toThrow(/path/i);
    }
    expect(queued).toEqual([]);
  });

  it('leaves to the client a create it refuses (data over 1 MiB)', () => {
    const { client, queued } = recordingClient();
    expect(() => createStart(client, '/big', 0, Buffer.alloc(1_048_577))(() => undefined)).toThrow(/1048576|smaller/);
    expect(queued).toEqual([]);
  });

  it('registers the watcher of a watched read as the client does: once it succeeded, not for a missing node', () => {
    const direct = recordingClient();
    const through = recordingClient({ retries: 1 });
    const noNode = (zookeeper.Exception as unknown as { create(code: number, path: string): Error }).create(
      zookeeper.Exception.NO_NODE,
      '/gone',
    );
    for (const { client, queued } of [direct, through]) {
      expect(outcome(watchDataStart(client, '/gone', watcher), queued, (callback) => callback(noNode))).toEqual([
        null,
        false,
      ]);
      const told: unknown[] = [];
      watchDataStart(client, '/here', watcher)((...args) => told.push(args));
      // Not before the answer: a read that fails leaves no watch behind.
      expect(watchedPaths(client)).toEqual([]);
      queued.at(-1)!.callback(null, { payload: { data: Buffer.alloc(0), stat } });
      expect(told).toEqual([[null, true]]);
      expect(watchedPaths(client)).toEqual(['/here']);
    }
  });
});

describe('the create of an entry, a CREATE2 the client has no method for', () => {
  it("goes on the wire as the client's create would, with the type CREATE2 (15), and gives back the path and the czxid", () => {
    const direct = recordingClient();
    const through = recordingClient({ retries: 1 });
    const path = '/baton/q/_c_x-lock-';
    const told: unknown[][] = [];
    createEntryStart(
      direct.client,
      path,
      zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
      Buffer.from('d'),
      aclFor('creator-only'),
    )((...args) => told.push(args));
    createStart(
      through.client,
      path,
      zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
      Buffer.from('d'),
      aclFor('creator-only'),
    )(() => undefined);
    const [ours, theirs] = [direct.queued.at(-1)!.request.toBuffer(), through.queued.at(-1)!.request.toBuffer()];
    expect(ours.readInt32BE(8)).toBe(15);
    expect(theirs.readInt32BE(8)).toBe(1); // the client's CREATE
    // Everything else (length, xid, path, data, ACL, flags) is the very same bytes.
    expect(Buffer.concat([ours.subarray(0, 8), ours.subarray(12)])).toEqual(
      Buffer.concat([theirs.subarray(0, 8), theirs.subarray(12)]),
    );
    direct.queued.at(-1)!.callback(null, { payload: { path: `${path}0000000003`, stat } });
    expect(told).toEqual([[null, { path: `${path}0000000003`, czxid: 9n }]]);
  });

  it('is a create and an exists through a client baton cannot hand requests to', () => {
    const { client, queued } = recordingClient({ retries: 1 });
    const told: unknown[][] = [];
    createEntryStart(
      client,
      '/baton/q/_c_x-lock-',
      zookeeper.CreateMode.EPHEMERAL_SEQUENTIAL,
    )((...args) => told.push(args));
    expect(queued.at(-1)!.request.toBuffer().readInt32BE(8)).toBe(1); // CREATE
    queued.at(-1)!.callback(null, { payload: { path: '/baton/q/_c_x-lock-0000000003' } });
    expect(queued.at(-1)!.request.toBuffer().readInt32BE(8)).toBe(3); // EXISTS
    queued.at(-1)!.callback(null, { header: { err: 0 }, payload: { stat } } as never);
    expect(told).toEqual([[null, { path: '/baton/q/_c_x-lock-0000000003', czxid: 9n }]]);
  });
});

describe('the heartbeat, a sync the client has no method for', () => {
  it("goes on the wire as a sync of the path, filed as a sync (baton's reader reads its reply as a path)", () => {
    const { client, queued } = recordingClient();
    const { start, leader } = reachLeaderStart(client, '/');
    expect(leader).toBe(true);
    const told: unknown[][] = [];
    start((...args) => told.push(args));
    const request = queued.at(-1)!.request as { toBuffer(): Buffer; header: { type: number } };
    const bytes = request.toBuffer();
    // length, xid (not numbered yet), type 9 (sync), then the path as a ustring: a SyncRequest.
    const expected = Buffer.alloc(4 + 4 + 4 + 4 + 1);
    expected.writeInt32BE(expected.length - 4, 0);
    expected.writeInt32BE(0, 4);
    expected.writeInt32BE(9, 8);
    expected.writeInt32BE(1, 12);
    expected.write('/', 16);
    expect(bytes).toEqual(expected);
    expect(request.header.type).toBe(9); // filed as what it is: replies.ts reads a sync's reply
    queued.at(-1)!.callback(null, { payload: { path: '/' } });
    const lost = (zookeeper.Exception as unknown as { create(code: number, path: string): Error }).create(
      zookeeper.Exception.CONNECTION_LOSS,
      '/',
    );
    start((...args) => told.push(args));
    queued.at(-1)!.callback(lost);
    expect(told).toEqual([[null], [lost]]);
  });

  it('is a plain read with a client baton cannot hand requests to directly', () => {
    const { client } = recordingClient({ retries: 1 });
    expect(reachLeaderStart(client, '/').leader).toBe(false);
  });
});

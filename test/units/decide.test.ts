import { describe, expect, it } from 'vitest';

import type { Entry } from '../../recipes/contract.js';
import { type Decide, exclusive, shared } from '../../recipes/decide.js';
import { PermitsMismatchError } from '../../recipes/errors.js';
import { semaphoreDecide } from '../../recipes/permits.js';
import { entriesFromRange, entryKey, moverRange, queuePrefix, type StoredKey } from '../../src/backends/etcd/keys.js';
import { ListingParser } from '../../src/backends/zookeeper/names.js';

// Who blocks whom, for every recipe, as tables. `exclusive` decides for the mutex, the write lock and
// the election; `shared` for the read lock; a downgrade is a read placed at its writer's order. Each row
// is [what, rule, queue, the deciding entry, the entry it must wait for or null (it proceeds)].

/** Rows on abstract queues: `kind@order` entries, sorted as a backend lists them; entries are named by index. */
type Row = [what: string, rule: Decide, queue: string, self: number, blocker: number | null];

function queueOf(spec: string): Entry[] {
  return spec.split(' ').map((item, index) => {
    const [kind, order] = item.split('@') as [string, string];
    return { queue: 'q', key: `${item}#${index}`, kind, order: BigInt(order), fencingToken: BigInt(order) };
  });
}

const MUTEX: Row[] = [
  ['alone: proceeds', exclusive, 'lock@1', 0, null],
  ['behind the holder: waits for it', exclusive, 'lock@1 lock@2', 1, 0],
  ['third in line: waits only for the entry just before it', exclusive, 'lock@1 lock@2 lock@3', 2, 1],
  ['the holder: entries behind it do not matter', exclusive, 'lock@1 lock@2 lock@3', 0, null],
  ['orders with gaps (etcd revisions): still the entry just before', exclusive, 'lock@3 lock@40 lock@41', 2, 1],
  ['behind a reader of the same name: waits for it', exclusive, 'read@1 lock@2', 1, 0],
  ['behind a writer of the same name: waits for it', exclusive, 'write@1 lock@2', 1, 0],
  ['behind a candidate of the same name: waits for it', exclusive, 'candidate@1 lock@2', 1, 0],
];

const WRITE: Row[] = [
  ['alone: proceeds', exclusive, 'write@1', 0, null],
  ['behind readers: waits for the last of them', exclusive, 'read@1 read@2 write@3', 2, 1],
  ['behind a writer: waits for it', exclusive, 'write@1 write@2', 1, 0],
  ['behind a mutex entry of the same name: waits for it', exclusive, 'lock@1 write@2', 1, 0],
  ['readers behind it do not matter', exclusive, 'write@1 read@2 read@3', 0, null],
];

const READ: Row[] = [
  ['alone: proceeds', shared, 'read@1', 0, null],
  ['behind readers only: proceeds, sharing with them', shared, 'read@1 read@2 read@3', 2, null],
  ['behind a writer: waits for it', shared, 'write@1 read@2', 1, 0],
  ['behind a writer and readers: waits for the writer, not the readers between', shared, 'write@1 read@2 read@3', 2, 0],
  ['writers before it: waits for the nearest', shared, 'write@1 write@2 read@3', 2, 1],
  ['a reader behind a queued writer waits (no starving the writer)', shared, 'read@1 write@2 read@3', 2, 1],
  ['waits for the nearest writer before it, not an earlier one', shared, 'write@1 read@2 write@3 read@4', 3, 2],
  ['a writer behind it does not matter', shared, 'read@1 write@2', 0, null],
  ['behind a mutex entry of the same name: waits for it', shared, 'lock@1 read@2', 1, 0],
  ['behind a candidate of the same name: waits for it', shared, 'candidate@1 read@2', 1, 0],
];

// A downgrade puts a read at its write's order, listed right after the write (see the peers' tables
// below for how each backend sorts it), then withdraws the write.
const DOWNGRADE: Row[] = [
  ["the read at its writer's order: does not wait for that writer", shared, 'write@4 read@4 write@6', 1, null],
  ['the read, alone once the writer is gone: proceeds', shared, 'read@4 write@6', 0, null],
  ['a writer that queued later: waits for the read', exclusive, 'write@4 read@4 write@6', 2, 1],
  [
    'readers that queued right behind the writer: proceed once the writer is gone',
    shared,
    'read@4 read@5 read@6 write@7',
    2,
    null,
  ],
  ['readers that queued right behind the writer: still wait while it is there', shared, 'write@4 read@4 read@5', 2, 0],
  ['a reader that queued later waits for the later writer only', shared, 'read@4 write@6 read@7', 2, 1],
  ['a mutex entry that queued later: waits for the read', exclusive, 'read@4 lock@5', 1, 0],
];

const ELECTION: Row[] = [
  ['the head leads', exclusive, 'candidate@1 candidate@2', 0, null],
  ['a candidate watches only the one before it', exclusive, 'candidate@1 candidate@2 candidate@3', 2, 1],
  ['behind a lock-kind entry (LeaderSelector, kazoo Election): waits for it', exclusive, 'lock@1 candidate@2', 1, 0],
  ['behind a Go key (etcd Election): waits for it', exclusive, 'exclusive@1 candidate@2', 1, 0],
  ['behind a reader of the same name: waits for it', exclusive, 'read@1 candidate@2', 1, 0],
];

/** Peers' kinds as the backends give them: `lock` (Curator, kazoo), `exclusive` (etcd's Go recipes). */
const PEER_KINDS: Row[] = [
  ['mutex behind a Go key: waits for it', exclusive, 'exclusive@5 lock@9', 1, 0],
  ['read behind a Go key: waits for it, a Go key is never shared', shared, 'exclusive@1 read@2 read@3', 2, 0],
  ['read behind a kazoo or Curator lock: waits for it', shared, 'lock@1 read@2', 1, 0],
  ['read behind a peer read (kazoo rlock, Curator __READ__): proceeds', shared, 'read@1 read@2', 1, null],
  ['Go key behind a baton read: the read goes first', exclusive, 'read@1 exclusive@2', 1, 0],
];

describe('decide: who must go first', () => {
  const tables: [string, Row[]][] = [
    ['mutex', MUTEX],
    ['write lock', WRITE],
    ['read lock', READ],
    ['downgrade', DOWNGRADE],
    ['election', ELECTION],
    ["peers' kinds", PEER_KINDS],
  ];
  for (const [recipe, rows] of tables) {
    describe(recipe, () => {
      it.each(rows)('%s', (_what, decide, spec, self, blocker) => {
        const queue = queueOf(spec);
        const found = decide(queue, queue[self]!);
        expect(found === null ? null : queue.indexOf(found as Entry)).toBe(blocker);
      });
    });
  }

  it('reads only the entries ordered before the deciding one (a listing may stop there)', () => {
    const queue = queueOf('read@1 write@2 read@3 write@4');
    for (const decide of [exclusive, shared]) {
      for (let self = 0; self < queue.length; self += 1) {
        const upTo = queue.slice(0, self + 1);
        expect(decide(upTo, queue[self]!), `${decide === exclusive ? 'exclusive' : 'shared'} at ${self}`).toBe(
          decide(queue, queue[self]!),
        );
      }
    }
  });
});

// The same rules on queues as each backend reads them from the server, names written by every client
// that shares the queue: the kind each name is read as and the place it sorts at decide the outcome.

/** [what, rule, child names in any order, the deciding child, the child it waits for or null] */
type NamedRow = [what: string, rule: Decide, children: string[], self: string, blocker: string | null];

const CURATOR = '_c_0f8fad5b-d9cb-469f-a165-70867728950e-';
const KAZOO = '0f8fad5bd9cb469fa16570867728950e';
const BATON = '_c_7c9e6679-7425-40de-944b-e07fc1f90ae7-';
const seq = (n: number): string => String(n).padStart(10, '0');

const ZOOKEEPER: NamedRow[] = [
  [
    'mutex behind a Curator InterProcessMutex',
    exclusive,
    [`${BATON}lock-${seq(2)}`, `${CURATOR}lock-${seq(1)}`],
    `${BATON}lock-${seq(2)}`,
    `${CURATOR}lock-${seq(1)}`,
  ],
  [
    'mutex behind an unprotected Curator lock',
    exclusive,
    [`lock-${seq(1)}`, `${BATON}lock-${seq(2)}`],
    `${BATON}lock-${seq(2)}`,
    `lock-${seq(1)}`,
  ],
  [
    'mutex behind a kazoo Lock',
    exclusive,
    [`${KAZOO}__lock__${seq(1)}`, `${BATON}lock-${seq(2)}`],
    `${BATON}lock-${seq(2)}`,
    `${KAZOO}__lock__${seq(1)}`,
  ],
  [
    'read behind a Curator __READ__ and a kazoo __rlock__: proceeds',
    shared,
    [`${CURATOR}__READ__${seq(1)}`, `${KAZOO}__rlock__${seq(2)}`, `${BATON}__READ__${seq(3)}`],
    `${BATON}__READ__${seq(3)}`,
    null,
  ],
  [
    'read behind a Curator __WRIT__: waits for it',
    shared,
    [`${CURATOR}__WRIT__${seq(1)}`, `${BATON}__READ__${seq(2)}`],
    `${BATON}__READ__${seq(2)}`,
    `${CURATOR}__WRIT__${seq(1)}`,
  ],
  [
    'read behind a kazoo WriteLock (kazoo names it __lock__): waits for it',
    shared,
    [`${KAZOO}__lock__${seq(1)}`, `${BATON}__READ__${seq(2)}`],
    `${BATON}__READ__${seq(2)}`,
    `${KAZOO}__lock__${seq(1)}`,
  ],
  [
    'write behind a kazoo ReadLock: waits for it',
    exclusive,
    [`${KAZOO}__rlock__${seq(1)}`, `${BATON}__WRIT__${seq(2)}`],
    `${BATON}__WRIT__${seq(2)}`,
    `${KAZOO}__rlock__${seq(1)}`,
  ],
  [
    'candidate behind a Curator LeaderLatch',
    exclusive,
    [`${CURATOR}latch-${seq(3)}`, `${BATON}latch-${seq(4)}`],
    `${BATON}latch-${seq(4)}`,
    `${CURATOR}latch-${seq(3)}`,
  ],
  [
    'read behind a baton 0.1 write (still read): waits for it',
    shared,
    [`${CURATOR}write-${seq(1)}`, `${BATON}__READ__${seq(2)}`],
    `${BATON}__READ__${seq(2)}`,
    `${CURATOR}write-${seq(1)}`,
  ],
  [
    "downgrade: the read at the write's sequence sorts after it, and a later writer waits for the read",
    exclusive,
    [
      `${BATON}__WRIT__${seq(5)}`,
      `${CURATOR}__WRIT__${seq(6)}`,
      `${BATON}__READ__${seq(4)}`,
      `${BATON}__WRIT__${seq(4)}`,
    ],
    `${CURATOR}__WRIT__${seq(6)}`,
    `${BATON}__WRIT__${seq(5)}`,
  ],
  [
    'downgrade: the read placed at the write does not wait for it',
    shared,
    [`${BATON}__READ__${seq(4)}`, `${BATON}__WRIT__${seq(4)}`],
    `${BATON}__READ__${seq(4)}`,
    null,
  ],
  [
    'a foreign child is no entry: it blocks nobody',
    exclusive,
    ['stray', `${BATON}lock-${seq(2)}`],
    `${BATON}lock-${seq(2)}`,
    null,
  ],
];

describe("decide on ZooKeeper listings: Curator's, kazoo's and baton's names in one queue", () => {
  it.each(ZOOKEEPER)('%s', (_what, decide, children, self, blocker) => {
    const { entries } = new ListingParser().parse('q', '/ns/q', children, 1n);
    const keyOf = (child: string): string => `/ns/q/${child}`;
    const mine = entries.find((entry) => entry.key === keyOf(self));
    expect(mine, `${self} read as an entry`).toBeDefined();
    expect((decide(entries, mine!) as Entry | null)?.key ?? null).toBe(blocker === null ? null : keyOf(blocker));
  });
});

const PREFIX = queuePrefix('ns', 'q');
const LEASE_A = '7587863217484449281';
const LEASE_B = '7587863217484449282';
const hex = (lease: string): string => BigInt(lease).toString(16);
/** A baton key of `lease` (slot 0 unless given) created at `revision`, optionally placed at order `at`. */
const baton = (lease: string, kind: string, revision: number, at?: number, slot = 0): StoredKey => ({
  key: entryKey(PREFIX, hex(lease).padStart(16, '0'), slot, kind, at === undefined ? undefined : BigInt(at)),
  create_revision: String(revision),
  lease,
});
/** The key etcd's Go Mutex or Election writes: the prefix and the lease id in hex, with that lease. */
const goKey = (lease: string, revision: number): StoredKey => ({
  key: `${PREFIX}${hex(lease)}`,
  create_revision: String(revision),
  lease,
});

/** [what, rule, stored keys in any order, index of the deciding key, index of the key it waits for or null] */
type EtcdRow = [what: string, rule: Decide, kvs: StoredKey[], self: number, blocker: number | null];

const ETCD: EtcdRow[] = [
  ['mutex behind a Go Mutex key: waits for it', exclusive, [goKey(LEASE_B, 10), baton(LEASE_A, 'lock', 11)], 1, 0],
  [
    'read behind a Go key: waits for it',
    shared,
    [baton(LEASE_A, 'read', 12), goKey(LEASE_B, 10), baton(LEASE_A, 'read', 11, undefined, 1)],
    0,
    1,
  ],
  [
    'candidate behind a Go Election key: waits for it',
    exclusive,
    [goKey(LEASE_B, 3), baton(LEASE_A, 'candidate', 7)],
    1,
    0,
  ],
  [
    'a Go-named key without its lease is no entry: blocks nobody',
    exclusive,
    [{ ...goKey(LEASE_B, 3), lease: '0' }, baton(LEASE_A, 'lock', 7)],
    1,
    null,
  ],
  [
    'a baton-named key without its lease is no entry: blocks nobody',
    exclusive,
    [{ ...baton(LEASE_B, 'lock', 3), lease: LEASE_A }, baton(LEASE_A, 'lock', 7)],
    1,
    null,
  ],
  [
    "a write key outside the writes' range (an earlier version's name) is an entry all the same",
    exclusive,
    [
      { ...baton(LEASE_B, 'write', 3), key: `${PREFIX}${hex(LEASE_B).padStart(16, '0')}-0-write` },
      baton(LEASE_A, 'lock', 7),
    ],
    1,
    0,
  ],
  [
    "a lock key inside the writes' range is no entry",
    exclusive,
    [
      { ...baton(LEASE_B, 'lock', 3), key: `${PREFIX}~write~${hex(LEASE_B).padStart(16, '0')}-0-lock` },
      baton(LEASE_A, 'lock', 7),
    ],
    1,
    null,
  ],
  [
    "a semaphore's key in its range is an entry: a mutex waits for it",
    exclusive,
    [baton(LEASE_B, 'semaphore_1_2', 3), baton(LEASE_A, 'lock', 7)],
    1,
    0,
  ],
  [
    'downgrade: the read placed at order 5 sorts right after the write at 5, ahead of a writer at 6',
    exclusive,
    [baton(LEASE_B, 'write', 6), baton(LEASE_A, 'read', 9, 5, 1), baton(LEASE_A, 'write', 5)],
    0,
    1,
  ],
  [
    'downgrade: the placed read does not wait for its write',
    shared,
    [baton(LEASE_A, 'read', 9, 5, 1), baton(LEASE_A, 'write', 5)],
    0,
    null,
  ],
];

describe("etcd keys: a mover's entries in a range of their own", () => {
  it('names a write and a semaphore entry inside their mover ranges, and any other kind outside both', () => {
    const lease = hex(LEASE_A).padStart(16, '0');
    for (const [kind, mover] of [
      ['write', 'write'],
      ['semaphore_2_5', 'semaphore'],
    ] as const) {
      const key = Buffer.from(entryKey(PREFIX, lease, 3, kind));
      const { key: start, range_end: end } = moverRange(PREFIX, mover);
      expect(Buffer.compare(start, key) <= 0 && Buffer.compare(key, end) < 0, `${key.toString()} in its range`).toBe(
        true,
      );
    }
    for (const kind of ['lock', 'read', 'candidate']) {
      const key = Buffer.from(entryKey(PREFIX, lease, 3, kind));
      for (const mover of ['write', 'semaphore'] as const) {
        const { key: start, range_end: end } = moverRange(PREFIX, mover);
        expect(Buffer.compare(start, key) <= 0 && Buffer.compare(key, end) < 0).toBe(false);
      }
    }
  });
});

describe("decide on etcd ranges: baton's keys and etcd's Go recipes' keys in one queue", () => {
  it.each(ETCD)('%s', (_what, decide, kvs, self, blocker) => {
    const entries = entriesFromRange('q', PREFIX, kvs);
    const keyOf = (index: number): string => kvs[index]!.key.toString();
    const mine = entries.find((entry) => entry.key === keyOf(self));
    expect(mine, `${keyOf(self)} read as an entry`).toBeDefined();
    expect((decide(entries, mine!) as Entry | null)?.key ?? null).toBe(blocker === null ? null : keyOf(blocker));
  });
});

/** [what, permits, queue of `semaphore_<count>_<permits>@order`, the deciding entry, the blockers' indexes or null] */
const s = (count: number, order: number, permits = 4): string => `semaphore_${count}_${permits}@${order}`;
const SEMAPHORE_CASES: [string, number, string, number, number | number[] | null][] = [
  ['alone, asking for all permits', 4, s(4, 1), 0, null],
  ['fits beside the holders', 4, [s(1, 1), s(2, 2), s(1, 3)].join(' '), 2, null],
  ['the first waiter watches every holder ahead', 4, [s(1, 1), s(2, 2), s(2, 3)].join(' '), 2, [0, 1]],
  ['a later waiter watches the waiter before it', 4, [s(3, 1), s(2, 2), s(1, 3)].join(' '), 2, 1],
  [
    'strict FIFO: a small ask behind a large one waits although it would fit',
    4,
    [s(2, 1), s(3, 2), s(1, 3)].join(' '),
    2,
    1,
  ],
  [
    'a waiter granted and put again at its place counts once',
    4,
    [s(2, 1), s(2, 2), s(2, 2), s(1, 3)].join(' '),
    3,
    [0, 1, 2],
  ],
  ['entries behind it do not matter', 2, [s(1, 1, 2), s(2, 2, 2)].join(' '), 0, null],
];

describe('decide: semaphore', () => {
  it.each(SEMAPHORE_CASES)('%s', (_what, permits, spec, self, blockers) => {
    const queue = queueOf(spec);
    const found = semaphoreDecide(permits, 'semaphore "q"')(queue, queue[self]!);
    const indexes =
      found === null ? null : Array.isArray(found) ? found.map((e) => queue.indexOf(e)) : queue.indexOf(found as Entry);
    expect(indexes).toEqual(blockers);
  });

  it('throws PermitsMismatchError for other permits or another kind ahead, naming both', () => {
    const other = queueOf(`${s(1, 1, 3)} ${s(1, 2, 4)}`);
    expect(() => semaphoreDecide(4, 'semaphore "q"')(other, other[1]!)).toThrow(PermitsMismatchError);
    expect(() => semaphoreDecide(4, 'semaphore "q"')(other, other[1]!)).toThrow(/permits 4.*permits 3/);
    const mixed = queueOf(`lock@1 ${s(1, 2, 4)}`);
    expect(() => semaphoreDecide(4, 'semaphore "q"')(mixed, mixed[1]!)).toThrow(/kind "lock"/);
  });
});

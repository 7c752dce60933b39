import { describe, expect, it } from 'vitest';
import type { Entry } from '../../recipes/contract.js';
import { exclusive, shared, type Decide } from '../../recipes/decide.js';

// Who blocks whom, for every recipe, as a table: a queue written as `kind@order` entries (sorted, as a
// backend lists it), the entry deciding, and the entry it must wait for (or none). Peers' entries take
// part with the kinds the backends give them: `lock` (Curator's and kazoo's exclusive names),
// `exclusive` (etcd's Go keys), `candidate` (LeaderLatch's).

function queueOf(spec: string): Entry[] {
  return spec === ''
    ? []
    : spec.split(' ').map((item, index) => {
        const [kind, order] = item.split('@') as [string, string];
        return { queue: 'q', key: `${item}#${index}`, kind, order: BigInt(order), fencingToken: BigInt(order) };
      });
}

/** [what, rule, queue, the deciding entry's index, the blocker's index or null] */
const CASES: [string, Decide, string, number, number | null][] = [
  ['mutex: alone', exclusive, 'lock@1', 0, null],
  ['mutex: behind a holder', exclusive, 'lock@1 lock@2', 1, 0],
  ['mutex: watches only the entry just before it', exclusive, 'lock@1 lock@2 lock@3', 2, 1],
  ['mutex: entries behind it do not matter', exclusive, 'lock@1 lock@2 lock@3', 0, null],
  ['mutex: behind a reader of the same name', exclusive, 'read@1 lock@2', 1, 0],
  ['mutex: behind a Go key', exclusive, 'exclusive@5 lock@9', 1, 0],
  ['write: behind readers, waits for the last', exclusive, 'read@1 read@2 write@3', 2, 1],
  ['write: behind a kazoo writer (a lock-kind entry)', exclusive, 'lock@1 write@2', 1, 0],
  ['read: behind readers only', shared, 'read@1 read@2 read@3', 2, null],
  ['read: behind a writer, waits for it', shared, 'write@1 read@2', 1, 0],
  ['read: waits for the nearest writer before it', shared, 'write@1 read@2 write@3 read@4', 3, 2],
  ['read: a writer behind it does not matter', shared, 'read@1 write@2', 0, null],
  ['read: a peer lock entry excludes it', shared, 'lock@1 read@2', 1, 0],
  ['read: a Go key excludes it', shared, 'exclusive@1 read@2 read@3', 2, 0],
  ['read: a candidate of the same name excludes it', shared, 'candidate@1 read@2', 1, 0],
  ['downgrade: the read at its writer\'s order does not wait for it', shared, 'write@4 read@4 write@6', 1, null],
  ['downgrade: a writer that queued later waits for the read', exclusive, 'write@4 read@4 write@6', 2, 1],
  ['downgrade: a reader that queued later waits for the later writer only', shared, 'read@4 write@6 read@7', 2, 1],
  ['election: the head leads', exclusive, 'candidate@1 candidate@2', 0, null],
  ['election: a candidate watches the one before it', exclusive, 'candidate@1 candidate@2 candidate@3', 2, 1],
  ['election: behind a LeaderSelector or kazoo candidate (lock-kind)', exclusive, 'lock@1 candidate@2', 1, 0],
];

describe('decide: who must go first', () => {
  it.each(CASES)('%s', (_what, decide, spec, self, blocker) => {
    const queue = queueOf(spec);
    const found = decide(queue, queue[self]!);
    expect(found === null ? null : queue.indexOf(found as Entry)).toBe(blocker);
  });
});

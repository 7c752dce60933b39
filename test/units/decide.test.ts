import { describe, expect, it } from 'vitest';
import type { Entry } from '../../recipes/contract.js';
import { exclusive, shared, type Decide } from '../../recipes/decide.js';
import { PermitsMismatchError } from '../../recipes/errors.js';
import { semaphoreDecide } from '../../recipes/permits.js';

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

/** [what, permits, queue of `semaphore_<count>_<permits>@order`, the deciding entry, the blockers' indexes or null] */
const s = (count: number, order: number, permits = 4): string => `semaphore_${count}_${permits}@${order}`;
const SEMAPHORE_CASES: [string, number, string, number, number | number[] | null][] = [
  ['alone, asking for all permits', 4, s(4, 1), 0, null],
  ['fits beside the holders', 4, [s(1, 1), s(2, 2), s(1, 3)].join(' '), 2, null],
  ['the first waiter watches every holder ahead', 4, [s(1, 1), s(2, 2), s(2, 3)].join(' '), 2, [0, 1]],
  ['a later waiter watches the waiter before it', 4, [s(3, 1), s(2, 2), s(1, 3)].join(' '), 2, 1],
  ['strict FIFO: a small ask behind a large one waits although it would fit', 4, [s(2, 1), s(3, 2), s(1, 3)].join(' '), 2, 1],
  ['a waiter granted and put again at its place counts once', 4, [s(2, 1), s(2, 2), s(2, 2), s(1, 3)].join(' '), 3, [0, 1, 2]],
  ['entries behind it do not matter', 2, [s(1, 1, 2), s(2, 2, 2)].join(' '), 0, null],
];

describe('decide: semaphore', () => {
  it.each(SEMAPHORE_CASES)('%s', (_what, permits, spec, self, blockers) => {
    const queue = queueOf(spec);
    const found = semaphoreDecide(permits, 'semaphore "q"')(queue, queue[self]!);
    const indexes = found === null ? null : Array.isArray(found) ? found.map((e) => queue.indexOf(e)) : queue.indexOf(found as Entry);
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

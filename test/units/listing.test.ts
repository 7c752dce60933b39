import { describe, expect, it } from 'vitest';

import { BackendError } from '../../recipes/errors.js';
import { foreignChildren } from '../../src/backends/zookeeper/foreign-children.js';
import {
  entryPrefix,
  hasNegativeSequence,
  learnToken,
  ListingParser,
  parseEntryName,
  UuidSequence,
} from '../../src/backends/zookeeper/names.js';

const uuid = (n: number): string => `${String(n).padStart(8, '0')}-0000-4000-8000-000000000000`;
const child = (n: number, kind: string, sequence: number): string =>
  `_c_${uuid(n)}-${kind}-${String(sequence).padStart(10, '0')}`;

// The ZooKeeper backend parses every listing of a queue with one ListingParser per session, which
// keeps the entries of recent listings: what it returns must be what parsing afresh would return.
describe('ListingParser', () => {
  it('gives the queue in order, the same entries on a second listing', () => {
    const parser = new ListingParser();
    const children = [child(3, 'lock', 12), child(1, 'lock', 10), child(2, 'lock', 11)];
    const first = parser.parse('q', '/baton/q', children, 5n);
    expect(first.foreign).toBe(false);
    expect(first.entries.map((e) => [e.key, e.order])).toEqual([
      ['/baton/q/' + child(1, 'lock', 10), 10n],
      ['/baton/q/' + child(2, 'lock', 11), 11n],
      ['/baton/q/' + child(3, 'lock', 12), 12n],
    ]);
    const second = parser.parse('q', '/baton/q', [child(2, 'lock', 11), child(4, 'lock', 13)], 5n);
    expect(second.entries.map((e) => e.order)).toEqual([11n, 13n]);
    expect(second.entries[0]).toBe(first.entries[1]); // parsed once
  });

  // A listing has the directory's stat only: an entry's token (its own czxid) comes from its create or a read of it.
  it('gives a listed entry no fencing token until one is learned, and keeps the first one learned', () => {
    const parser = new ListingParser();
    const [entry] = parser.parse('q', '/baton/q', [child(1, 'lock', 0)], 5n).entries;
    expect(() => entry!.fencingToken).toThrow(BackendError);
    learnToken(entry!, 7n);
    learnToken(entry!, 9n);
    expect(entry!.fencingToken).toBe(7n);
    expect(parser.parse('q', '/baton/q', [child(1, 'lock', 0)], 5n).entries[0]!.fencingToken).toBe(7n); // the same entry
  });

  it('a directory created again (another czxid) starts afresh: its entries are new, without a token', () => {
    const parser = new ListingParser();
    const [before] = parser.parse('q', '/baton/q', [child(1, 'lock', 0)], 5n).entries;
    learnToken(before!, 6n);
    const [again] = parser.parse('q', '/baton/q', [child(1, 'lock', 0)], 9n).entries;
    expect(again).not.toBe(before);
    expect(() => again!.fencingToken).toThrow(BackendError);
  });

  it('sorts a downgraded read right after the write at its sequence, and flags foreign children', () => {
    const parser = new ListingParser();
    const { entries, foreign } = parser.parse(
      'q',
      '/baton/q',
      [child(2, 'read', 7), 'stray', child(1, 'write', 7), child(3, 'write', 8)],
      1n,
    );
    expect(entries.map((e) => `${e.kind}-${e.order}`)).toEqual(['write-7', 'read-7', 'write-8']);
    expect(foreign).toBe(true);
    expect(parser.parse('q', '/baton/q', [child(1, 'write', 7)], 1n).foreign).toBe(false);
  });

  it('keeps listings of a bounded number of directories, and forgets children that left', () => {
    const parser = new ListingParser();
    const kept = parser.parse('q0', '/baton/q0', [child(1, 'lock', 1)], 1n).entries[0];
    for (let i = 1; i <= 64; i += 1) parser.parse(`q${i}`, `/baton/q${i}`, [child(1, 'lock', 1)], 1n);
    // q0 was the least recently listed of 65 directories: parsed afresh, an equal but new entry.
    const again = parser.parse('q0', '/baton/q0', [child(1, 'lock', 1)], 1n).entries[0];
    expect(again).toEqual(kept);
    expect(again).not.toBe(kept);
    // A long queue that drained: the entries that left are not kept (parsed afresh if seen again).
    const long = Array.from({ length: 100 }, (_, i) => child(i, 'lock', i));
    const full = parser.parse('q0', '/baton/q0', long, 1n).entries;
    parser.parse('q0', '/baton/q0', [long[99]!], 1n);
    const refilled = parser.parse('q0', '/baton/q0', long, 1n).entries;
    expect(refilled[99]).toBe(full[99]);
    expect(refilled[0]).toEqual(full[0]);
    expect(refilled[0]).not.toBe(full[0]);
  });

  it('sorts listings of any length and order: by sequence, a read after the entry at its sequence', () => {
    const parser = new ListingParser();
    for (const length of [2, 5, 16, 17, 40]) {
      const kinds = ['lock', 'read', 'write'];
      const names = Array.from({ length }, (_, i) => child(i, kinds[i % 3]!, Math.floor(i / 2)));
      // A fixed shuffle: each name moves to a place its index decides.
      const shuffled = names
        .map((name, i) => [(i * 7919) % 104729, name] as const)
        .sort((a, b) => a[0] - b[0])
        .map(([, name]) => name);
      const entries = parser.parse(`s${length}`, `/baton/s${length}`, shuffled, 1n).entries;
      const rank = (e: { order: bigint; kind: string }): number => Number(e.order) * 2 + (e.kind === 'read' ? 1 : 0);
      expect(entries.length).toBe(length);
      for (let i = 1; i < entries.length; i += 1) expect(rank(entries[i - 1]!)).toBeLessThanOrEqual(rank(entries[i]!));
    }
  });

  it('parses only what it needs up to an entry: the entries behind it are left out until a listing needs them', () => {
    const parser = new ListingParser();
    const children = [child(4, 'lock', 14), child(1, 'write', 11), child(2, 'read', 11), child(3, 'lock', 12), 'stray'];
    // Through the read placed at sequence 11: the write at 11 and the read itself, nothing behind them.
    const head = parser.parse('q', '/baton/q', children, 1n, 11);
    expect(head.entries.map((e) => `${e.kind}-${e.order}`)).toEqual(['write-11', 'read-11']);
    expect(head.foreign).toBe(true);
    // Listed in full later: the same objects for what was parsed, and the rest in order.
    const full = parser.parse('q', '/baton/q', children, 1n);
    expect(full.entries.map((e) => `${e.kind}-${e.order}`)).toEqual(['write-11', 'read-11', 'lock-12', 'lock-14']);
    expect(full.entries[0]).toBe(head.entries[0]);
    expect(full.entries[1]).toBe(head.entries[1]);
    // Already parsed entries behind the limit may come back with it: still in order, the head unchanged.
    const again = parser.parse('q', '/baton/q', children, 1n, 12);
    expect(again.entries.slice(0, 3).map((e) => `${e.kind}-${e.order}`)).toEqual(['write-11', 'read-11', 'lock-12']);
  });

  it("reads every peer client's entry names as entries of their kind, mixed with baton's in sequence order", () => {
    const parser = new ListingParser();
    const curatorId = '0f8fad5b-d9cb-469f-a165-70867728950e';
    const goId = '0f8fad5bd9cb469fa16570867728950e';
    const children = [
      `_c_${curatorId}-lock-0000000001`, // Curator InterProcessMutex / LeaderSelector, protected
      'lock-0000000002', // the same, unprotected
      `_c_${goId}-lock-0000000003`, // go-zookeeper's protected lock
      `_c_${curatorId}-__WRIT__0000000004`,
      '__READ__0000000005',
      `_c_${curatorId}-latch-0000000006`,
      `${goId}__lock__0000000007`, // kazoo Lock / WriteLock / Election
      `${goId}__rlock__0000000008`, // kazoo ReadLock
      `_c_${curatorId}-write-0000000009`, // baton 0.1
    ];
    const { entries, foreign } = parser.parse('q', '/baton/q', [...children].reverse(), 1n);
    expect(foreign).toBe(false);
    expect(entries.map((e) => `${e.kind}-${e.order}`)).toEqual([
      'lock-1',
      'lock-2',
      'lock-3',
      'write-4',
      'read-5',
      'candidate-6',
      'lock-7',
      'read-8',
      'write-9',
    ]);
    expect(children.map((c) => parseEntryName(c)?.form)).toEqual([
      'curator',
      'curator',
      'curator',
      'curator',
      'curator',
      'curator',
      'kazoo',
      'kazoo',
      'baton-0.1',
    ]);
    expect(parseEntryName(children[0]!)?.uuid).toBe(goId);
    expect(parseEntryName(children[1]!)?.uuid).toBeUndefined();
    expect(parseEntryName(children[6]!)?.uuid).toBe(goId);
  });

  it('reads what a peer itself would wait for: any name ending in a kazoo marker, any protected Curator name', () => {
    const parser = new ListingParser();
    const loose = [
      '4f1c9a__lock__0000000001',
      '__rlock__0000000002',
      '_c_garbage-lock-0000000003',
      '_c_0F8FAD5B-D9CB-469F-A165-70867728950E-__WRIT__0000000004',
    ];
    const { entries, foreign } = parser.parse('q', '/baton/q', loose, 1n);
    expect(foreign).toBe(false);
    expect(entries.map((e) => `${e.kind}-${e.order}`)).toEqual(['lock-1', 'read-2', 'lock-3', 'write-4']);
    // An id only where it has the form its client writes: a lost create is found by its own id only.
    expect(loose.map((c) => parseEntryName(c)?.uuid)).toEqual([
      undefined,
      undefined,
      'garbage',
      '0F8FAD5BD9CB469FA16570867728950E',
    ]);
  });

  it('leaves names that only resemble an entry foreign', () => {
    const parser = new ListingParser();
    const strays = [
      'lock-000000001', // nine digits
      'xlock-0000000001', // something before an unprotected Curator marker
      'read-0000000001', // baton 0.1 wrote its names protected only
      'nested-lock',
      'member-0000000001',
      '4f1c9a__lease__0000000001',
      'semaphore_1_4-0000000001', // a kind with parameters is written protected only
      `_c_${uuid(1)}-semaphore-0000000001`, // a kind without parameters that no client writes
      `_c_${uuid(1)}-semaphore_1_x-0000000001`,
    ];
    const { entries, foreign } = parser.parse('q', '/baton/q', strays, 1n);
    expect(entries).toEqual([]);
    expect(foreign).toBe(true);
    // Valid lock names without a sequence could be nested locks' directories: not reported.
    expect(foreignChildren(strays).sort()).toEqual(
      strays.filter((s) => s !== 'nested-lock' && s !== 'lock-000000001').sort(),
    );
  });

  // ZooKeeper writes a sequence with %010d of a signed 32-bit count: past 2^31 - 1 it reads -2147483648,
  // then counts up to -000000001. Curator and kazoo sort those names as text (first, and the later of
  // two first), so no order baton picks agrees with theirs: the listing is refused instead.
  it('refuses a queue whose sequence wrapped negative, in every form a peer or baton writes, naming the directory', () => {
    const goId = '0f8fad5bd9cb469fa16570867728950e';
    const wrapped = [
      'lock--2147483648', // Curator, unprotected, the first name past the wrap
      `_c_${uuid(1)}-lock--2147483647`,
      `_c_${uuid(1)}-__WRIT__-1000000000`,
      `${goId}__lock__-000000001`, // kazoo, the last name before the count reaches 0 again
      `${goId}__rlock__-999999999`,
      `_c_${uuid(2)}-semaphore_1_4--2147483648`,
      `_c_${uuid(3)}-latch--000000042`,
    ];
    for (const name of wrapped) {
      expect(hasNegativeSequence(name), name).toBe(true);
      const parser = new ListingParser();
      const listing = [child(1, 'lock', 2147483646), child(2, 'lock', 2147483647), name];
      const refusal = (() => {
        try {
          parser.parse('q', '/baton/q', listing, 1n);
        } catch (error) {
          return error;
        }
        return undefined;
      })();
      expect(refusal, name).toBeInstanceOf(BackendError);
      expect((refusal as Error).message).toContain(`/baton/q`);
      expect((refusal as Error).message).toContain(name);
      expect((refusal as Error).message).toContain('delete the directory');
      // Also when only the head up to an entry is parsed (a woken waiter), and again on the next listing.
      expect(() => parser.parse('q', '/baton/q', listing, 1n, 2147483646)).toThrow(BackendError);
      expect(() => parser.parse('q', '/baton/q', listing, 1n)).toThrow(BackendError);
      // Once the directory is renewed (another czxid, counting from 0) the queue reads again.
      expect(parser.parse('q', '/baton/q', [child(1, 'lock', 0)], 2n).entries.map((e) => e.order)).toEqual([0n]);
    }
  });

  it('reads no negative sequence into a positive name or a stray', () => {
    const positives = [
      child(1, 'lock', 0),
      child(1, 'lock', 2147483647),
      'lock-0000000005',
      '__READ__0000000001',
      `${'a'.repeat(32)}__lock__1000000000`,
    ];
    const strays = [
      'lock-000000001',
      'member--2147483648',
      'x-lock--2147483648',
      'lock--21474836480',
      'lock---000000001',
      'lock--00000001',
      '-2147483648',
    ];
    for (const name of [...positives, ...strays]) expect(hasNegativeSequence(name), name).toBe(false);
    const parser = new ListingParser();
    const { entries, foreign } = parser.parse('q', '/baton/q', [...positives, ...strays], 1n);
    expect(entries.length).toBe(positives.length);
    expect(foreign).toBe(true);
  });

  it('writes each dialect as its peer names it, and finds the writer of each name again', () => {
    const uuids = new UuidSequence();
    const names = [
      ['curator', 'lock', 'lock-'],
      ['curator', 'read', '__READ__'],
      ['curator', 'write', '__WRIT__'],
      ['curator', 'candidate', 'latch-'],
      ['curator-selector', 'candidate', 'lock-'],
      ['kazoo', 'lock', '__lock__'],
      ['kazoo', 'write', '__lock__'],
      ['kazoo', 'read', '__rlock__'],
      ['kazoo', 'candidate', '__lock__'],
    ] as const;
    for (const [dialect, kind, marker] of names) {
      const uuid = uuids.next();
      const child = `${entryPrefix('/d', uuid, kind, dialect).slice(3)}0000000042`;
      expect(child.endsWith(`${marker}0000000042`), `${dialect} ${kind}: ${child}`).toBe(true);
      expect(parseEntryName(child)).toMatchObject({ uuid: uuid.replaceAll('-', ''), sequence: 42n });
      expect(uuids.owns(child)).toBe(true);
    }
    expect(new UuidSequence().owns(`${entryPrefix('/d', uuids.next(), 'lock', 'kazoo').slice(3)}0000000001`)).toBe(
      false,
    );
  });

  it('writes a kind with parameters in the protected form and reads it back as it was written', () => {
    const uuids = new UuidSequence();
    const uuid = uuids.next();
    for (const dialect of [undefined, 'kazoo'] as const) {
      const name = `${entryPrefix('/d', uuid, 'semaphore_2_5', dialect).slice(3)}0000000042`;
      expect(name).toBe(`_c_${uuid}-semaphore_2_5-0000000042`);
      expect(parseEntryName(name)).toEqual({
        uuid: uuid.replaceAll('-', ''),
        kind: 'semaphore_2_5',
        form: 'baton',
        sequence: 42n,
      });
    }
    const parser = new ListingParser();
    const { entries, foreign } = parser.parse(
      'q',
      '/d',
      [child(2, 'semaphore_1_5', 8), child(1, 'semaphore_2_5', 7)],
      1n,
    );
    expect(entries.map((e) => `${e.kind}@${e.order}`)).toEqual(['semaphore_2_5@7', 'semaphore_1_5@8']);
    expect(foreign).toBe(false);
  });
});

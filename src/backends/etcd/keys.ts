import { BoundedMap } from '../../../recipes/bounded-map.js';
import type { Entry } from '../../../recipes/contract.js';
import { type Mover, moverOf } from '../../../recipes/decide.js';

/**
 * Key layout: `<namespace>/<queue>/#/<lease>-<slot>-<kind>` (a kind may carry parameters,
 * `semaphore_2_5`), and `.../#/~<mover>~<lease>-<slot>-<kind>` for a mover's entry (a write or a
 * semaphore's, see `moverOf`), so that an enqueue can count each mover's entries with a range of
 * their own instead of reading the queue. The `#` is outside the lock-name alphabet,
 * so the range of one queue never takes in the entries of a lock nested below it (`a` vs `a/b`). The key
 * is derived from the session's lease and a slot that is reused once free, so that keys are not
 * created afresh for every acquisition (deleted keys slow every prefix read until compaction).
 */
const ENTRY = /^(?:~(?<mover>[a-z]+)~)?(?<lease>[0-9a-f]{16})-(?<slot>\d+)-(?<kind>[a-z]+(?:_\d+)*)(?:@(?<at>\d+))?$/;

/**
 * etcd's Go recipes (`concurrency.Mutex`, `concurrency.Election`, so also `etcdctl lock` and `elect`)
 * name their key `<prefix><lease id in hex>`; pointed at a queue's prefix (`NewMutex(s, "<ns>/<queue>/#")`)
 * it is an exclusive entry like any other, ordered by its create revision. A Go waiter waits for every
 * key created before its own, so it already waits for baton's.
 */
const GO_KEY = /^[0-9a-f]{1,16}$/;
/**
 * The kind of a Go key: exclusive, a Mutex's or an Election's (whose value is the proposal), which its
 * name does not tell apart. An election takes it for a candidate; a lock waits for it like any other.
 */
export const GO_KIND = 'exclusive';

export function queuePrefix(namespace: string, queue: string): string {
  return `${namespace}/${queue}/#/`;
}

/** The end of a prefix range: the prefix with its last byte incremented. */
export function prefixEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  end[end.length - 1] = end[end.length - 1]! + 1;
  return end;
}

/** `at`: the order of an entry of ours this one takes the place of (a downgrade), kept in the key. */
export function entryKey(prefix: string, lease: string, slot: number, kind: string, at?: bigint): string {
  const mover = moverOf(kind);
  return `${prefix}${mover === undefined ? '' : `~${mover}~`}${lease}-${slot}-${kind}${at === undefined ? '' : `@${at}`}`;
}

/** The count-only read of one mover's entries in a queue (see the key layout). */
export function moverRange(prefix: string, mover: Mover): { key: Buffer; range_end: Buffer; count_only: true } {
  const start = `${prefix}~${mover}~`;
  return { key: Buffer.from(start), range_end: prefixEnd(start), count_only: true };
}

export interface StoredKey {
  readonly key: Buffer | string;
  readonly create_revision: string;
  readonly lease?: string;
}

/**
 * An entry read from etcd, carrying what the driver needs of the read that showed it. Kept on the entry
 * itself: in a WeakMap, every entry of every listing was an insertion, and a drain of 1,000 queued
 * waiters (each listing the whole queue) grew the maps' tables to 16 MiB each, never shrunk.
 */
export class EtcdEntry implements Entry {
  readonly queue: string;
  readonly key: string;
  readonly kind: string;
  readonly order: bigint;
  readonly fencingToken: bigint;
  /** Its key's create revision: which incarnation of a reused key this entry is. */
  readonly #createdAt: bigint;

  constructor(queue: string, key: string, kind: string, order: bigint, createdAt: bigint) {
    this.queue = queue;
    this.key = key;
    this.kind = kind;
    this.order = order;
    this.fencingToken = order;
    this.#createdAt = createdAt;
  }

  /** The create revision of the entry's key; the entry's order if it did not come from a read. */
  static createdAt(entry: Entry): bigint {
    return #createdAt in entry ? entry.#createdAt : entry.order;
  }
}

/**
 * Entries from a range read, in create-revision order; keys baton did not write are
 * ignored.
 */
export function entriesFromRange(queue: string, prefix: string, kvs: readonly StoredKey[]): Entry[] {
  const entries: Entry[] = [];
  for (const kv of kvs) {
    const key = kv.key.toString();
    const match = entryMatch(prefix, key, kv);
    if (match === null && !isGoEntry(prefix, key, kv)) continue;
    const createdAt = BigInt(kv.create_revision);
    const at = match?.groups!['at'];
    const order = at === undefined ? createdAt : BigInt(at);
    entries.push(new EtcdEntry(queue, key, match === null ? GO_KIND : match.groups!['kind']!, order, createdAt));
  }
  // An entry placed at another's order (a downgrade's read) sorts right after it.
  return entries.sort((a, b) =>
    a.order < b.order ? -1 : a.order > b.order ? 1 : Number(a.kind === 'read') - Number(b.kind === 'read'),
  );
}

/** Keys in a queue's range that are no client's entry (nested locks live outside it, under their own `#/`). */
export function foreignKeys(prefix: string, kvs: readonly StoredKey[]): string[] {
  return kvs
    .filter((kv) => entryMatch(prefix, kv.key.toString(), kv) === null && !isGoEntry(prefix, kv.key.toString(), kv))
    .map((kv) => kv.key.toString());
}

/** Which client wrote an entry's key: `baton`, or `etcd-go` for etcd's Go recipes. */
export function clientOf(prefix: string, key: string): 'baton' | 'etcd-go' {
  return isGoKeyName(prefix, key) ? 'etcd-go' : 'baton';
}

/** A key named as Go's recipes name theirs, and attached to the lease its name gives. */
function isGoEntry(prefix: string, key: string, kv: StoredKey): boolean {
  return (
    isGoKeyName(prefix, key) &&
    kv.lease !== undefined &&
    kv.lease !== '0' &&
    hexOf(kv.lease) === key.slice(prefix.length).padStart(16, '0')
  );
}

function isGoKeyName(prefix: string, key: string): boolean {
  return key.startsWith(prefix) && GO_KEY.test(key.slice(prefix.length));
}

/**
 * The parts of an entry's name, or null for a key that is no entry: one not named like an entry, one
 * in a mover's range of another kind, or one not attached to the lease
 * its name gives. baton writes every entry with its session's lease; a key named like one without it
 * (put by hand, copied by `make-mirror`, restored from a backup) would otherwise stand in the queue
 * for ever, since no lease of it ever expires.
 */
function entryMatch(prefix: string, key: string, kv: StoredKey): RegExpExecArray | null {
  const match = nameMatch(prefix, key);
  if (match === null || (kv.lease !== undefined && (kv.lease === '0' || hexOf(kv.lease) !== match.groups!['lease'])))
    return null;
  return match;
}

/**
 * The parts of a key named as one of baton's entries. A mover's entry named without its range is
 * an earlier version's (before 2026-12), read as an entry all the same: it holds or waits.
 */
function nameMatch(prefix: string, key: string): RegExpExecArray | null {
  if (!key.startsWith(prefix)) return null;
  const match = ENTRY.exec(key.slice(prefix.length));
  const mover = match?.groups!['mover'];
  if (match === null || (mover !== undefined && mover !== moverOf(match.groups!['kind']!))) return null;
  return match;
}

/** Whether a key in a queue's range is named as an entry of the session whose lease is `lease` (hex). */
export function isKeyOfLease(prefix: string, key: string, lease: string): boolean {
  // The test of the name only for keys that carry the lease at all: most keys of a queue are others'.
  return key.includes(lease) && nameMatch(prefix, key)?.groups!['lease'] === lease;
}

/** `leaseHex` of the leases seen lately (the oldest forgotten first): listings read the same few leases again and again. */
const leasesSeen = new BoundedMap<string, string>(4096);
function hexOf(lease: string): string {
  return leasesSeen.getOrSet(lease, () => leaseHex(lease));
}

/** The slot number in one of our keys. */
export function slotOf(key: string): number | undefined {
  const match = ENTRY.exec(key.slice(key.lastIndexOf('/') + 1));
  return match === null ? undefined : Number(match.groups!['slot']);
}

/** The lease id as it appears in keys: 16 hex digits. */
export function leaseHex(id: string): string {
  return BigInt(id).toString(16).padStart(16, '0');
}

import { randomUUID } from 'node:crypto';

import { BoundedMap } from '../../../recipes/bounded-map.js';
import type { Entry } from '../../../recipes/contract.js';
import { BackendError } from '../../../recipes/errors.js';

/**
 * Child names of a queue directory. baton reads the names every well-known ZooKeeper lock client
 * writes, so that its entries and theirs form one queue, and writes the names of the peer it is told
 * to (`dialect`), so that the peer sees its entries too:
 *
 * - Curator: `[_c_<uuid>-]lock-<seq>` (InterProcessMutex, LeaderSelector; go-zookeeper's protected
 *   locks too), `__WRIT__` / `__READ__` (InterProcessReadWriteLock), `latch-` (LeaderLatch).
 * - kazoo: `<32 hex>__lock__<seq>` (Lock, WriteLock, Election), `<32 hex>__rlock__<seq>` (ReadLock).
 * - baton 0.1: `_c_<uuid>-read-`, `-write-`, `-candidate-` (read, so that an older process is never
 *   overlooked while both run; no longer written).
 */
export type ZkDialect = 'curator' | 'curator-selector' | 'kazoo';
export const ZK_DIALECTS: readonly ZkDialect[] = ['curator', 'curator-selector', 'kazoo'];

/**
 * Who writes names of a form: what `baton inspect` shows (baton's own default names are Curator's;
 * `baton` is baton's own form for a kind with parameters, which no peer writes).
 */
export type NameForm = 'curator' | 'kazoo' | 'baton-0.1' | 'baton';

interface Marker {
  /** What stands right before the sequence. */
  readonly text: string;
  readonly kind: string;
  readonly form: NameForm;
}

/** Most frequent first: a listing tries them in this order on every child it has not seen before. */
const MARKERS: readonly Marker[] = [
  { text: 'lock-', kind: 'lock', form: 'curator' },
  { text: '__WRIT__', kind: 'write', form: 'curator' },
  { text: '__READ__', kind: 'read', form: 'curator' },
  { text: 'latch-', kind: 'candidate', form: 'curator' },
  { text: '__lock__', kind: 'lock', form: 'kazoo' },
  { text: '__rlock__', kind: 'read', form: 'kazoo' },
  { text: 'read-', kind: 'read', form: 'baton-0.1' },
  { text: 'write-', kind: 'write', form: 'baton-0.1' },
  { text: 'candidate-', kind: 'candidate', form: 'baton-0.1' },
];

/**
 * A kind with parameters (`semaphore_2_5`, see `Entry.kind`), which no peer has a name for: written and
 * read in the protected form as `_c_<uuid>-<kind>-<seq>`, its kind taken from the name.
 */
const PARAMETERIZED = MARKERS.length;
const PARAMETERIZED_KIND = /^[a-z]+(?:_\d+)+$/;

const SEQUENCE_DIGITS = 10;
const MARKER_CODES = 16;
const PROTECTED = '_c_';
const DASH = 45;
/** kazoo's own names: `uuid4().hex` before the marker. */
const KAZOO_ID = /^[0-9a-f]{32}$/;

/** The marker a child's name carries, if the whole name has one of the forms above; -1 otherwise. */
export function markerOf(child: string): number {
  return trailingSequence(child) < 0 ? -1 : markerBefore(child, child.length - SEQUENCE_DIGITS);
}

/**
 * The marker ending at `end` (where the sequence starts), if what stands before it is what its client
 * accepts there. A peer waits for every name it reads as an entry, so baton reads at least those: kazoo
 * takes any name ending in its marker and a sequence; Curator's names are the marker alone or protected,
 * `_c_<id>-` before it (Curator writes a UUID as the id, go-zookeeper 32 hex digits).
 */
function markerBefore(child: string, end: number): number {
  for (let m = 0; m < MARKERS.length; m += 1) {
    const { text, form } = MARKERS[m]!;
    const at = end - text.length;
    if (at < 0 || !child.startsWith(text, at)) continue;
    if (form === 'kazoo') return m;
    if (at === 0) return form === 'curator' ? m : -1;
    return at > PROTECTED.length + 1 && child.startsWith(PROTECTED) && child.charCodeAt(at - 1) === DASH ? m : -1;
  }
  return parameterizedKindBefore(child, end) === undefined ? -1 : PARAMETERIZED;
}

/** The kind with parameters that a protected name carries right before `end` (its sequence), if any. */
function parameterizedKindBefore(child: string, end: number): string | undefined {
  if (child.charCodeAt(end - 1) !== DASH || !child.startsWith(PROTECTED)) return undefined;
  const start = child.lastIndexOf('-', end - 2) + 1;
  if (start <= PROTECTED.length + 1) return undefined;
  const kind = child.slice(start, end - 1);
  return PARAMETERIZED_KIND.test(kind) ? kind : undefined;
}

/** The kind of a child whose `entryCode` is `code`. */
function kindOf(child: string, code: number): string {
  const marker = code % MARKER_CODES;
  return marker === PARAMETERIZED
    ? parameterizedKindBefore(child, child.length - SEQUENCE_DIGITS)!
    : MARKERS[marker]!.kind;
}

/**
 * What a listing keeps of a child: its sequence and marker in one number (`sequence * MARKER_CODES +
 * marker`), or -1 for a child that is no client's entry. One pass over the name, which under
 * contention is new to the parser in nearly every listing.
 */
function entryCode(child: string): number {
  const sequence = trailingSequence(child);
  if (sequence < 0) return -1;
  const marker = markerBefore(child, child.length - SEQUENCE_DIGITS);
  return marker < 0 ? -1 : sequence * MARKER_CODES + marker;
}

/**
 * The number in the last ten characters of a child's name or of a path ending in one (an entry of
 * ours: no other check), or -1 if they are not all digits.
 */
export function trailingSequence(name: string): number {
  if (name.length < SEQUENCE_DIGITS) return -1;
  let sequence = 0;
  for (let i = name.length - SEQUENCE_DIGITS; i < name.length; i += 1) {
    const digit = name.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return -1;
    sequence = sequence * 10 + digit;
  }
  return sequence;
}

/**
 * Whether a child is named as some client's entry but with a negative sequence. ZooKeeper's sequence is
 * the directory's signed 32-bit count of creates written with `%010d`: past 2^31 - 1 it wraps to
 * `-2147483648` and counts up to `-000000001`. Peers order such names as text, which puts them ahead of
 * every positive one and the later of two before the earlier (`-2147483647` < `-2147483648`), so no
 * order of baton's could agree with theirs: a queue that holds one is refused (see `ListingParser.parse`).
 */
export function hasNegativeSequence(child: string): boolean {
  for (const digits of [SEQUENCE_DIGITS, SEQUENCE_DIGITS - 1]) {
    const sign = child.length - digits - 1;
    if (sign < 1 || child.charCodeAt(sign) !== DASH || !allDigits(child, sign + 1)) continue;
    if (markerBefore(child, sign) >= 0) return true;
  }
  return false;
}

function allDigits(text: string, from: number): boolean {
  for (let i = from; i < text.length; i += 1) {
    const digit = text.charCodeAt(i) - 48;
    if (digit < 0 || digit > 9) return false;
  }
  return true;
}

/** The refusal of a queue whose directory's sequence wrapped (see `hasNegativeSequence`). */
export function sequenceWrappedError(dir: string, child: string): BackendError {
  return new BackendError(
    `ZooKeeper's sequence counter of ${dir} has passed 2^31 - 1 and wrapped (child ${child}): baton, Curator and kazoo ` +
      'cannot order its entries alike, so baton refuses this lock. Stop every client of it and delete the directory; ' +
      'created again, it counts from 0 (docs/failure-model.md, "Known limits")',
  );
}

/** The sequence of a child named as some client's queue entry, or -1 for any other name. */
export function sequenceOf(child: string): number {
  const code = entryCode(child);
  return code < 0 ? -1 : Math.floor(code / MARKER_CODES);
}

export interface ParsedName {
  /** The creator's id without dashes, for protected and kazoo names: how a lost create is found again. */
  readonly uuid: string | undefined;
  readonly kind: string;
  readonly form: NameForm;
  readonly sequence: bigint;
}

/** Parses a child name; anything that is no client's queue entry (a foreign child) gives undefined. */
export function parseEntryName(child: string): ParsedName | undefined {
  const code = entryCode(child);
  if (code < 0) return undefined;
  const sequence = BigInt(Math.floor(code / MARKER_CODES));
  const kind = kindOf(child, code);
  if (code % MARKER_CODES === PARAMETERIZED)
    return {
      uuid: creatorId(child, child.length - SEQUENCE_DIGITS - kind.length - 1, 'baton'),
      kind,
      form: 'baton',
      sequence,
    };
  const { text, form } = MARKERS[code % MARKER_CODES]!;
  return { uuid: creatorId(child, child.length - SEQUENCE_DIGITS - text.length, form), kind, form, sequence };
}

/** The id a name carries before its marker (at `at`), as kazoo or protected names carry it; else undefined. */
function creatorId(child: string, at: number, form: NameForm): string | undefined {
  if (form === 'kazoo') return KAZOO_ID.test(child.slice(0, at)) ? child.slice(0, at) : undefined;
  return at === 0 ? undefined : uuidKey(child.slice(PROTECTED.length, at - 1));
}

/** The path prefix (sequence to follow) of an entry of `kind` written as `dialect` names it. */
export function entryPrefix(dir: string, uuid: string, kind: string, dialect: ZkDialect = 'curator'): string {
  if (dialect === 'kazoo' && !PARAMETERIZED_KIND.test(kind))
    return `${dir}/${uuidKey(uuid)}${kind === 'read' ? '__rlock__' : '__lock__'}`;
  return `${dir}/${PROTECTED}${uuid}-${curatorMarker(kind, dialect)}`;
}

function curatorMarker(kind: string, dialect: ZkDialect): string {
  if (PARAMETERIZED_KIND.test(kind)) return `${kind}-`;
  switch (kind) {
    case 'read':
      return '__READ__';
    case 'write':
      return '__WRIT__';
    case 'candidate':
      return dialect === 'curator-selector' ? 'lock-' : 'latch-';
    default:
      return 'lock-';
  }
}

/**
 * The uuids of one session's entry names: a random UUID whose last 12 hex digits count up. Each name
 * of the session differs, and the random part (74 bits) keeps sessions apart as well as a fresh
 * random UUID per name would, for less than the cost of making one per acquisition.
 */
export class UuidSequence {
  /** The random part, `xxxxxxxx-xxxx-4xxx-yxxx-`. */
  readonly base = randomUUID().slice(0, 24);
  readonly #protectedPrefix = PROTECTED + this.base;
  readonly #hexPrefix = uuidKey(this.base);
  #next = 0;

  next(): string {
    return this.base + (this.#next++).toString(16).padStart(12, '0');
  }

  /** Whether a child's name starts as this session's names do, in any dialect. */
  owns(child: string): boolean {
    return child.startsWith(this.#protectedPrefix) || child.startsWith(this.#hexPrefix);
  }
}

/** A uuid as `ParsedName.uuid` gives it: without dashes. */
export function uuidKey(uuid: string): string {
  return uuid.replaceAll('-', '');
}

/**
 * A queue entry read from a child's name. Its fencing token is its own creation zxid, which a listing
 * does not give (getChildren2 has one stat, the directory's): the driver learns it from the create
 * that made the entry (CREATE2 answers with the stat), or from a read of the entry (an election's
 * leader, `inspect`). A token asked for before it was learned is an error, never a guess.
 */
class ZkEntry implements Entry {
  readonly queue: string;
  readonly key: string;
  readonly kind: string;
  readonly order: bigint;
  #token: bigint | undefined;
  /**
   * Its place in the queue as a number (sorting by it is cheaper than by the bigint order). A ZooKeeper
   * sequence is below 2^31, so the rank is exact. An entry placed at another's sequence (a downgrade)
   * sorts right after it: reads after everything else.
   */
  readonly #rank: number;

  constructor(queue: string, key: string, kind: string, sequence: number) {
    this.queue = queue;
    this.key = key;
    this.kind = kind;
    this.order = BigInt(sequence);
    this.#rank = sequence * 2 + (kind === 'read' ? 1 : 0);
  }

  get fencingToken(): bigint {
    if (this.#token === undefined)
      throw new BackendError(
        `the fencing token of ${this.key} is not known: it was only listed, never created or read by this session`,
      );
    return this.#token;
  }

  /** Sets the token once; the first one learned stays (a downgraded read keeps its writer's). */
  learnToken(token: bigint): void {
    this.#token ??= token;
  }

  static byRank(a: ZkEntry, b: ZkEntry): number {
    return a.#rank - b.#rank;
  }
}

/**
 * Gives a listed entry its fencing token: the creation zxid of its znode (a stat's czxid), or for a
 * downgraded read the token of the write whose place it took. Entries of other backends are left alone.
 */
export function learnToken(entry: Entry, token: bigint): void {
  if (entry instanceof ZkEntry) entry.learnToken(token);
}

/** How many directories' last listings a session keeps parsed. */
const PARSED_DIRECTORIES = 64;

/**
 * The queue from directory listings, parsing each child once: a queue is listed again with every
 * handoff and mostly holds the same children, so the entries of the last listing of recent
 * directories are kept (one incarnation of a directory: a directory created again has another czxid
 * and starts afresh).
 */
export class ListingParser {
  /**
   * Per directory, what each child was found to be: an entry, null (no client's entry), or only its
   * `entryCode` (a child behind the limit of the listing that saw it, not made an entry yet).
   */
  readonly #dirs = new BoundedMap<string, { czxid: bigint; byChild: Map<string, ZkEntry | null | number> }>(
    PARSED_DIRECTORIES,
  );
  /** The directory listed last: the one most often listed again, kept where it is (last) in `#dirs`. */
  #last: string | undefined;

  /**
   * The entries (of every client), sorted, and whether some child is no client's entry. Children with a sequence
   * above `through` not parsed before are left out, and parsed once a listing needs them. Throws
   * `BackendError` if some entry's sequence is negative (the directory's counter wrapped).
   */
  parse(
    queue: string,
    dir: string,
    children: readonly string[],
    czxid: bigint,
    through = Infinity,
  ): { entries: Entry[]; foreign: boolean } {
    let known = this.#dirs.get(dir);
    // Put back last: the most recently listed directories are kept.
    if (dir !== this.#last) this.#dirs.delete(dir);
    if (known === undefined || known.czxid !== czxid) known = { czxid, byChild: new Map() };
    const entries: ZkEntry[] = [];
    let foreign = false;
    for (const child of children) {
      let found = known.byChild.get(child);
      if (typeof found !== 'object') {
        // Not seen before, or seen behind an earlier limit: its code is all that was kept.
        const code = found ?? entryCode(child);
        if (code < 0 && hasNegativeSequence(child)) throw sequenceWrappedError(dir, child);
        const sequence = code < 0 ? -1 : Math.floor(code / MARKER_CODES);
        if (sequence > through) {
          if (found === undefined) known.byChild.set(child, code);
          continue;
        }
        found = code < 0 ? null : new ZkEntry(queue, `${dir}/${child}`, kindOf(child, code), sequence);
        known.byChild.set(child, found);
      }
      if (found === null) foreign = true;
      else entries.push(found);
    }
    // Children that left are forgotten once they outnumber the current ones.
    if (known.byChild.size > 2 * children.length + 8) {
      const current = new Map<string, ZkEntry | null | number>();
      for (const child of children) current.set(child, known.byChild.get(child)!);
      known.byChild = current;
    }
    if (children.length > 0) {
      this.#dirs.set(dir, known);
      this.#last = dir;
    } else if (dir === this.#last) {
      this.#dirs.delete(dir);
      this.#last = undefined;
    }
    return { entries: sortByRank(entries), foreign };
  }
}

/**
 * Sorts in place. A short queue (the usual one) by insertion, which allocates nothing; Array#sort makes
 * a work array on every call.
 */
function sortByRank(entries: ZkEntry[]): ZkEntry[] {
  if (entries.length > 16) return entries.sort(ZkEntry.byRank);
  for (let i = 1; i < entries.length; i += 1) {
    const entry = entries[i]!;
    let at = i;
    for (; at > 0 && ZkEntry.byRank(entries[at - 1]!, entry) > 0; at -= 1) entries[at] = entries[at - 1]!;
    entries[at] = entry;
  }
  return entries;
}

import { randomUUID } from 'node:crypto';
import type { Entry } from '../../../recipes/contract.js';

/**
 * Curator-style protected names, `_c_<uuid>-<kind>-<sequence>`, so that Curator and kazoo users see a
 * familiar queue, and so that after a lost create reply we can find our own node by its uuid.
 */
const ENTRY = /^_c_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-([a-z]+)-(\d{10})$/;

/**
 * The uuids of one session's entry names: a random UUID whose last 12 hex digits count up. Each name
 * of the session differs, and the random part (74 bits) keeps sessions apart as well as a fresh
 * random UUID per name would, for less than the cost of making one per acquisition.
 */
export class UuidSequence {
  /** The random part, `xxxxxxxx-xxxx-4xxx-yxxx-`: a child whose name starts `_c_<base>` was made by this session. */
  readonly base = randomUUID().slice(0, 24);
  #next = 0;

  next(): string {
    return this.base + (this.#next++).toString(16).padStart(12, '0');
  }
}

export function entryPrefix(dir: string, uuid: string, kind: string): string {
  return `${dir}/_c_${uuid}-${kind}-`;
}

export interface ParsedName {
  readonly uuid: string;
  readonly kind: string;
  readonly sequence: bigint;
}

/** Parses a child name; anything baton did not create (a foreign child) gives undefined. */
export function parseEntryName(child: string): ParsedName | undefined {
  const match = ENTRY.exec(child);
  if (match === null) return undefined;
  const [, uuid, kind, sequence] = match as unknown as [string, string, string, string];
  return { uuid, kind, sequence: BigInt(sequence) };
}

const DASH = 45;
/** Where the kind starts in `_c_<uuid>-<kind>-<sequence>`, and how long the sequence is. */
const KIND_AT = 3 + 36 + 1;
const SEQUENCE_DIGITS = 10;
/** Kinds spelled once, so that a parsed entry's kind is not a fresh string per child. */
const KINDS = ['lock', 'read', 'write', 'candidate'];

/**
 * The sequence of a child named like `ENTRY`, or -1 for any other name: the same test as the pattern,
 * by hand, since every listing under contention brings children new to the parser and the pattern's
 * match arrays were a good part of what a listing cost.
 */
export function sequenceOf(child: string): number {
  const end = child.length - SEQUENCE_DIGITS - 1; // the dash before the sequence
  if (end <= KIND_AT || !child.startsWith('_c_') || child.charCodeAt(end) !== DASH || child.charCodeAt(KIND_AT - 1) !== DASH) return -1;
  for (let i = 3; i < KIND_AT - 1; i += 1) {
    const c = child.charCodeAt(i);
    const dash = i === 11 || i === 16 || i === 21 || i === 26;
    if (dash ? c !== DASH : !((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return -1;
  }
  for (let i = KIND_AT; i < end; i += 1) {
    const c = child.charCodeAt(i);
    if (c < 97 || c > 122) return -1;
  }
  return trailingSequence(child);
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

function kindOf(child: string): string {
  const length = child.length - SEQUENCE_DIGITS - 1 - KIND_AT;
  for (const kind of KINDS) if (kind.length === length && child.startsWith(kind, KIND_AT)) return kind;
  return child.slice(KIND_AT, KIND_AT + length);
}

/**
 * A queue entry read from a child's name. Its fencing token is worked out when asked for: a listing's
 * entries are many, the holders that read a token few.
 */
class ZkEntry implements Entry {
  readonly queue: string;
  readonly key: string;
  readonly kind: string;
  readonly order: bigint;
  readonly #dirCzxid: bigint;
  /**
   * Its place in the queue as a number (sorting by it is cheaper than by the bigint order). A ZooKeeper
   * sequence is below 2^31, so the rank is exact. An entry placed at another's sequence (a downgrade)
   * sorts right after it: writes before reads.
   */
  readonly #rank: number;

  constructor(queue: string, key: string, kind: string, sequence: number, dirCzxid: bigint) {
    this.queue = queue;
    this.key = key;
    this.kind = kind;
    this.order = BigInt(sequence);
    this.#dirCzxid = dirCzxid;
    this.#rank = sequence * 2 + (kind === 'write' ? 0 : 1);
  }

  get fencingToken(): bigint {
    return (this.#dirCzxid << 32n) | this.order;
  }

  static byRank(a: ZkEntry, b: ZkEntry): number {
    return a.#rank - b.#rank;
  }
}

/** How many directories' last listings a session keeps parsed. */
const PARSED_DIRECTORIES = 64;

/**
 * The queue from directory listings, parsing each child once: a queue is listed again with every
 * handoff and mostly holds the same children, so the entries of the last listing of recent
 * directories are kept (one incarnation of a directory: a directory created again has another czxid
 * and starts afresh).
 *
 * The fencing token combines the directory's creation zxid with the sequence: within one directory
 * the sequence grows, and a directory created again after being removed has a larger zxid, so tokens
 * keep increasing across successive holders either way.
 */
export class ListingParser {
  /**
   * Per directory, what each child was found to be: an entry, null (not an entry of ours), or only its
   * sequence (a child behind the limit of the listing that saw it, not parsed further).
   */
  readonly #dirs = new Map<string, { czxid: bigint; byChild: Map<string, ZkEntry | null | number> }>();
  /** The directory listed last: the one most often listed again, kept where it is (last) in `#dirs`. */
  #last: string | undefined;

  /**
   * The entries, sorted, and whether some child is not an entry of ours. Children with a sequence
   * above `through` not parsed before are left out, and parsed once a listing needs them.
   */
  parse(queue: string, dir: string, children: readonly string[], czxid: bigint, through = Infinity): { entries: Entry[]; foreign: boolean } {
    let known = this.#dirs.get(dir);
    // Put back last: the most recently listed directories are kept.
    if (dir !== this.#last) this.#dirs.delete(dir);
    if (known === undefined || known.czxid !== czxid) known = { czxid, byChild: new Map() };
    const entries: ZkEntry[] = [];
    let foreign = false;
    for (const child of children) {
      let found = known.byChild.get(child);
      if (typeof found !== 'object') {
        // Not seen before, or seen behind an earlier limit: its sequence is all that was kept.
        const sequence = found ?? sequenceOf(child);
        if (sequence > through) {
          if (found === undefined) known.byChild.set(child, sequence);
          continue;
        }
        found = sequence < 0 ? null : new ZkEntry(queue, `${dir}/${child}`, kindOf(child), sequence, czxid);
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
      if (this.#dirs.size > PARSED_DIRECTORIES) this.#dirs.delete(this.#dirs.keys().next().value!);
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

const SEGMENT = /^[A-Za-z0-9._-]+$/;
/** A sequential znode's 10-digit suffix: other lock clients' queue entries (kazoo, Curator without protection). */
const SEQUENTIAL = /\d{10}$/;

/**
 * Children of a queue directory that baton did not create: anything that is not an entry of ours and
 * cannot be a nested lock's directory (a valid name segment not starting with `_c_`), and every
 * sequential node of another client (`<id>__lock__0000000007`, `__READ__0000000003`), whose owner
 * believes it queues in this lock. A nested lock named with a 10-digit suffix is reported too.
 */
export function foreignChildren(children: readonly string[]): string[] {
  return children.filter(
    (child) =>
      parseEntryName(child) === undefined &&
      (!SEGMENT.test(child) || child.startsWith('_c_') || child === '.' || child === '..' || SEQUENTIAL.test(child)),
  );
}

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

/** An entry and its place in the queue as a number (sorting by it is cheaper than by the bigint order). */
interface Ranked {
  readonly entry: Entry;
  readonly rank: number;
}

function rankedEntry(queue: string, dir: string, child: string, dirCzxid: bigint): Ranked | null {
  const parsed = parseEntryName(child);
  if (parsed === undefined) return null;
  const entry = { queue, key: `${dir}/${child}`, kind: parsed.kind, order: parsed.sequence, fencingToken: (dirCzxid << 32n) | parsed.sequence };
  // A ZooKeeper sequence is below 2^31, so the rank is exact. An entry placed at another's sequence
  // (a downgrade) sorts right after it: writes before reads.
  return { entry, rank: Number(parsed.sequence) * 2 + (parsed.kind === 'write' ? 0 : 1) };
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
  readonly #dirs = new Map<string, { czxid: bigint; byChild: Map<string, Ranked | null> }>();

  /** The entries, sorted, and whether some child is not an entry of ours. */
  parse(queue: string, dir: string, children: readonly string[], czxid: bigint): { entries: Entry[]; foreign: boolean } {
    let known = this.#dirs.get(dir);
    this.#dirs.delete(dir); // put back last: the most recently listed directories are kept
    if (known === undefined || known.czxid !== czxid) known = { czxid, byChild: new Map() };
    const ranked: Ranked[] = [];
    let foreign = false;
    for (const child of children) {
      let found = known.byChild.get(child);
      if (found === undefined) known.byChild.set(child, (found = rankedEntry(queue, dir, child, czxid)));
      if (found === null) foreign = true;
      else ranked.push(found);
    }
    // Children that left are forgotten once they outnumber the current ones.
    if (known.byChild.size > 2 * children.length + 8) {
      const current = new Map<string, Ranked | null>();
      for (const child of children) current.set(child, known.byChild.get(child)!);
      known.byChild = current;
    }
    if (children.length > 0) {
      this.#dirs.set(dir, known);
      if (this.#dirs.size > PARSED_DIRECTORIES) this.#dirs.delete(this.#dirs.keys().next().value!);
    }
    return { entries: ranked.sort((a, b) => a.rank - b.rank).map((r) => r.entry), foreign };
  }
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

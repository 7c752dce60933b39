import type { Entry } from '../../../recipes/contract.js';

/**
 * Curator-style protected names, `_c_<uuid>-<kind>-<sequence>`, so that Curator and kazoo users see a
 * familiar queue, and so that after a lost create reply we can find our own node by its uuid.
 */
const ENTRY = /^_c_([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-([a-z]+)-(\d{10})$/;

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

function entryOf(queue: string, dir: string, child: string, dirCzxid: bigint): Entry | null {
  const parsed = parseEntryName(child);
  if (parsed === undefined) return null;
  return { queue, key: `${dir}/${child}`, kind: parsed.kind, order: parsed.sequence, fencingToken: (dirCzxid << 32n) | parsed.sequence };
}

/** An entry placed at another's sequence (a downgrade) sorts right after it: writes before reads. */
function sortQueue(entries: Entry[]): Entry[] {
  return entries.sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : a.kind === b.kind ? 0 : a.kind === 'write' ? -1 : 1));
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
  readonly #dirs = new Map<string, { czxid: bigint; byChild: Map<string, Entry | null> }>();

  /** The entries, sorted, and whether some child is not an entry of ours. */
  parse(queue: string, dir: string, children: readonly string[], czxid: bigint): { entries: Entry[]; foreign: boolean } {
    let known = this.#dirs.get(dir);
    this.#dirs.delete(dir); // put back last: the most recently listed directories are kept
    if (known === undefined || known.czxid !== czxid) known = { czxid, byChild: new Map() };
    const entries: Entry[] = [];
    let foreign = false;
    for (const child of children) {
      let entry = known.byChild.get(child);
      if (entry === undefined) known.byChild.set(child, (entry = entryOf(queue, dir, child, czxid)));
      if (entry === null) foreign = true;
      else entries.push(entry);
    }
    // Children that left are forgotten once they outnumber the current ones.
    if (known.byChild.size > 2 * children.length + 8) {
      const current = new Map<string, Entry | null>();
      for (const child of children) current.set(child, known.byChild.get(child)!);
      known.byChild = current;
    }
    if (children.length > 0) {
      this.#dirs.set(dir, known);
      if (this.#dirs.size > PARSED_DIRECTORIES) this.#dirs.delete(this.#dirs.keys().next().value!);
    }
    return { entries: sortQueue(entries), foreign };
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

import type { Entry } from '../../../recipes/contract.js';

/**
 * Key layout: `<namespace>/<queue>/#/<lease>-<slot>-<kind>`. The `#` is outside the lock-name alphabet,
 * so the range of one queue never takes in the entries of a lock nested below it (`a` vs `a/b`). The key
 * is derived from the session's lease and a slot that is reused once free, so that keys are not
 * created afresh for every acquisition (deleted keys slow every prefix read until compaction).
 */
const ENTRY = /^([0-9a-f]{16})-(\d+)-([a-z]+)(?:@(\d+))?$/;

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
  return `${prefix}${lease}-${slot}-${kind}${at === undefined ? '' : `@${at}`}`;
}

export interface StoredKey {
  readonly key: Buffer | string;
  readonly create_revision: string;
  readonly lease?: string;
}

/** Entries from a range read, in create-revision order; keys baton did not write are ignored. */
export function entriesFromRange(queue: string, prefix: string, kvs: readonly StoredKey[]): Entry[] {
  const entries: Entry[] = [];
  for (const kv of kvs) {
    const key = kv.key.toString();
    const match = ENTRY.exec(key.slice(prefix.length));
    if (!key.startsWith(prefix) || match === null) continue;
    const order = BigInt(match[4] ?? kv.create_revision);
    entries.push({ queue, key, kind: match[3]!, order, fencingToken: order });
  }
  // An entry placed at another's order (a downgrade) sorts right after it: writes before reads.
  return entries.sort((a, b) => (a.order < b.order ? -1 : a.order > b.order ? 1 : a.kind === b.kind ? 0 : a.kind === 'write' ? -1 : 1));
}

/** Keys in a queue's range that baton did not write (nested locks live outside it, under their own `#/`). */
export function foreignKeys(prefix: string, kvs: readonly StoredKey[]): string[] {
  return kvs.map((kv) => kv.key.toString()).filter((key) => !key.startsWith(prefix) || ENTRY.exec(key.slice(prefix.length)) === null);
}

/** The slot number in one of our keys. */
export function slotOf(key: string): number | undefined {
  const match = ENTRY.exec(key.slice(key.lastIndexOf('/') + 1));
  return match === null ? undefined : Number(match[2]);
}

/** The lease id as it appears in keys: 16 hex digits. */
export function leaseHex(id: string): string {
  return BigInt(id).toString(16).padStart(16, '0');
}

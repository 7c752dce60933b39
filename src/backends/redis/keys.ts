import type { Entry } from '../../../recipes/contract.js';

/** The prefix of every session key. */
export const SESSION_PREFIX = 'baton:session:';

/**
 * The keys and channels of one lock: all under one hash tag, so that they share one cluster slot
 * (the sessions' keys in the lock too: see `livenessKey`).
 */
export interface LockKeys {
  /** `baton:{<namespace>/<lock>}`: the hash tag and the prefix of the lock's keys and channels. */
  readonly base: string;
  /** The hash of entries. */
  readonly queue: string;
  /** The counter: order and fencing token, never reset. */
  readonly counter: string;
  /** The channel told of every change of the queue (election observers). */
  readonly changes: string;
}

export function lockKeys(namespace: string, queue: string): LockKeys {
  const base = `baton:{${namespace}/${queue}}`;
  return { base, queue: `${base}:q`, counter: `${base}:c`, changes: `${base}:q` };
}

export function sessionKey(id: string): string {
  return `${SESSION_PREFIX}${id}`;
}

/** A session's liveness in one lock: its entries there live while this key does (see scripts.ts). */
export function livenessKey(base: string, sessionId: string): string {
  return `${base}:s:${sessionId}`;
}

/** An entry's key, which is also the channel its deletion is published on. */
export function entryKey(base: string, id: string): string {
  return `${base}:e:${id}`;
}

/** The entry id (`<session>-<n>`) inside an entry key. */
export function idOf(key: string): string {
  return key.slice(key.lastIndexOf(':e:') + 3);
}

/** The session that owns an entry id, or undefined for a field baton did not write. */
export function ownerOf(id: string): string | undefined {
  return /^([0-9a-f]+)-\d+$/.exec(id)?.[1];
}

/** One stored entry: its place, token, kind and data. */
export interface Stored {
  readonly entry: Entry;
  readonly owner: string;
  readonly data: string;
  /** When the server created it (ms since the epoch, the server's clock). */
  readonly createdAt: number;
}

/** A field and value of a queue's hash, or undefined if baton did not write it. */
export function parseStored(queue: string, base: string, id: string, value: string): Stored | undefined {
  const owner = ownerOf(id);
  const match = /^(\d{1,19}) (\d{1,19}) (\d{1,16}) ([a-z]+(?:_\d+)*) ([^]*)$/.exec(value);
  if (owner === undefined || match === null) return undefined;
  const [, order = '', token = '', created = '', kind = '', data = ''] = match;
  return {
    entry: { queue, key: entryKey(base, id), kind, order: BigInt(order), fencingToken: BigInt(token) },
    owner,
    data,
    createdAt: Number(created),
  };
}

/** A script's flat answer (field, value, ...) as entries sorted by order then token, and the foreign fields. */
export function parseQueue(
  queue: string,
  keys: LockKeys,
  flat: readonly string[],
): { stored: Stored[]; foreign: string[] } {
  const stored: Stored[] = [];
  const foreign: string[] = [];
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const found = parseStored(queue, keys.base, flat[i]!, flat[i + 1]!);
    if (found === undefined) foreign.push(entryKey(keys.base, flat[i]!));
    else stored.push(found);
  }
  stored.sort((a, b) => compare(a.entry, b.entry));
  return { stored, foreign };
}

/** By order, then token; two entries at one place (a downgrade's read at its write) by their ids' numbers. */
function compare(a: Entry, b: Entry): number {
  if (a.order !== b.order) return a.order < b.order ? -1 : 1;
  if (a.fencingToken !== b.fencingToken) return a.fencingToken < b.fencingToken ? -1 : 1;
  return numberOf(a.key) - numberOf(b.key);
}

function numberOf(key: string): number {
  return Number(key.slice(key.lastIndexOf('-') + 1));
}

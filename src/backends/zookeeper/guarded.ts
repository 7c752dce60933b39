import zookeeper from 'node-zookeeper-client';

import type { Entry, GuardedOp } from '../../../recipes/contract.js';
import { BackendError } from '../../../recipes/errors.js';
import type { Start } from '../requests.js';
import { getDataStat, type ZkClient, ZkCode } from './client.js';

/**
 * Where a lock's guarded values live: `<namespace>/~guarded/<queue>/~<name>`, persistent znodes. Not
 * in the queue's directory `<namespace>/<queue>`, whose children every contender lists (baton,
 * Curator, kazoo), nor in any other lock's: `~` is outside the lock-name alphabet, so no lock's
 * directory is `~guarded` or below it, and a value (`~<name>`) never meets a nested lock's directory
 * (`<queue>/<segment>`) there. They outlive the holder and go only when deleted; the directories stay,
 * as queue directories do.
 */
export function guardedPath(namespace: string, queue: string, name: string): string {
  return `${namespace}/~guarded/${queue}/~${name}`;
}

/** Whether a znode path is a guarded value's (for tests: nothing may be left behind). */
export const GUARDED_VALUE = /\/~guarded\/.+\/~[^/]+$/;

/** Builds the ops of a multi after its first, the check of the entry node. */
type Ops = (transaction: zookeeper.Transaction) => zookeeper.Transaction;

/** A multi's outcome: done, or the op (0: the entry's check) that failed with its code. */
type Outcome = { failedAt: -1 } | { failedAt: number; code: number };

/**
 * A multi whose first op checks that the entry node exists (version -1: any version). An entry's path
 * carries a protection GUID and a sequence, so it names one znode for all time, ephemeral and gone
 * with our session: while it exists, we hold it. An op's refusal is an outcome, not an error; any
 * other failure (connection loss, session expired) is the request's error, for the core to retry or map.
 */
export function checkedMultiStart(client: ZkClient, entry: Entry, ops: Ops): Start<Outcome> {
  return (done) =>
    ops(client.transaction().check(entry.key, -1)).commit((error, results: unknown) => {
      const codes = Array.isArray(results) ? results.map((result: { err?: number }) => result.err ?? 0) : [];
      const failedAt = codes.findIndex((code) => code !== 0);
      if (failedAt >= 0) return done(null, { failedAt, code: codes[failedAt]! });
      if (error) return done(error);
      done(null, { failedAt: -1 });
    });
}

/** The steps of a guarded write: each sends one checked multi; `send` retries it through the driver's core. */
export interface GuardedHost {
  readonly client: ZkClient;
  readonly namespace: string;
  readonly acl: zookeeper.ACL[];
  send(start: Start<Outcome>): Promise<Outcome>;
  /** Makes a directory and its missing ancestors, retried as the driver's requests are. */
  mkdirp(path: string): Promise<void>;
}

/** How many times a put goes between setData and create when another holder's write races it. */
const PUT_ROUNDS = 5;

/**
 * Applies `op` if the entry still exists: a put is a setData, or a create if the value is new (and
 * its directory made if missing); a delete is a remove, or only the check if the value is absent.
 */
export async function zkGuardedWrite(host: GuardedHost, entry: Entry, op: GuardedOp): Promise<boolean> {
  const path = guardedPath(host.namespace, entry.queue, op.name);
  if (op.type === 'delete') {
    const removed = await host.send(checkedMultiStart(host.client, entry, (t) => t.remove(path, -1)));
    if (removed.failedAt === 1 && isNoNode(removed)) return entryExists(host, entry);
    return settled(removed, path);
  }
  const data = Buffer.from(op.value);
  for (let round = 0; round < PUT_ROUNDS; round += 1) {
    const set = await host.send(checkedMultiStart(host.client, entry, (t) => t.setData(path, data, -1)));
    if (!(set.failedAt === 1 && isNoNode(set))) return settled(set, path);
    const made = await host.send(
      checkedMultiStart(host.client, entry, (t) => t.create(path, data, host.acl, zookeeper.CreateMode.PERSISTENT)),
    );
    if (made.failedAt === 1 && isNoNode(made)) await host.mkdirp(path.slice(0, path.lastIndexOf('/')));
    else if (!(made.failedAt === 1 && made.code === ZkCode.NODE_EXISTS)) return settled(made, path);
  }
  throw new BackendError(`guarded put of ${path}: the value kept being created and deleted by others`);
}

/** The value under `name` next to the lock `queue`, or null. */
export async function zkGuardedRead(
  client: ZkClient,
  namespace: string,
  queue: string,
  name: string,
): Promise<string | null> {
  return (await getDataStat(client, guardedPath(namespace, queue, name)))?.data.toString() ?? null;
}

function isNoNode(outcome: Outcome): boolean {
  return 'code' in outcome && outcome.code === ZkCode.NO_NODE;
}

/** Applied (true), refused by the entry's check (false), or an op's failure nobody expects. */
function settled(outcome: Outcome, path: string): boolean {
  if (outcome.failedAt === -1) return true;
  if (outcome.failedAt === 0) return false;
  const code = 'code' in outcome ? outcome.code : 0;
  throw new BackendError(`guarded write of ${path} failed with ZooKeeper code ${code}`, {
    cause: (ZkCode as unknown as { create(code: number): Error }).create(code),
  });
}

/** A delete of an absent value still answers whether we hold: a multi of the check alone. */
async function entryExists(host: GuardedHost, entry: Entry): Promise<boolean> {
  return settled(await host.send(checkedMultiStart(host.client, entry, (t) => t)), entry.key);
}

import zookeeper from 'node-zookeeper-client';

import { BackendError } from '../../../recipes/errors.js';
import { type Start, started } from '../requests.js';
import type { AclPolicy } from './acl.js';
import {
  create2Direct,
  createDirect,
  createsDirectly,
  directQueue,
  getChildrenDirect,
  removeDirect,
  syncDirect,
  watchDataDirect,
} from './client/direct.js';
import { nameServerCodes } from './client/replies.js';

export type ZkClient = zookeeper.Client;
export type ZkStat = zookeeper.Stat;
export const ZkCode = zookeeper.Exception;

/**
 * Codes a ZooKeeper 3.5+ server answers that node-zookeeper-client 1.1 does not know. The client builds
 * the error for a reply inside its socket's data handler, and throws `Unknown code` there for these: an
 * uncaught exception, which ends the process. A request on a session the server has just removed is
 * answered UNKNOWN_SESSION, so a session expiring under load could crash its user's process: baton's
 * own client reads its replies itself (client/replies.ts) and fails just that request.
 */
export const ZkServerCode = {
  UNKNOWN_SESSION: -12,
  NEW_CONFIG_NO_QUORUM: -13,
  RECONFIG_IN_PROGRESS: -14,
  SESSION_MOVED: -118,
  NOT_READ_ONLY: -119,
  EPHEMERAL_ON_LOCAL_SESSION: -120,
  NO_WATCHER: -121,
  REQUEST_TIMEOUT: -122,
  RECONFIG_DISABLED: -123,
  SESSION_CLOSED_REQUIRE_SASL_AUTH: -124,
  QUOTA_EXCEEDED: -125,
  THROTTLED_OP: -127,
} as const;

// The server's names for the codes the client does not know, for the errors baton's reader makes.
nameServerCodes(ZkServerCode);

export type { AclPolicy } from './acl.js';

export function aclFor(policy: AclPolicy): zookeeper.ACL[] {
  const { ACL, Id, Permission } = zookeeper as unknown as {
    ACL: new (permission: number, id: unknown) => zookeeper.ACL;
    Id: new (scheme: string, id: string) => unknown;
    Permission: { ALL: number; READ: number };
  };
  const creator = new ACL(Permission.ALL, new Id('auth', ''));
  const anyone = (permission: number): zookeeper.ACL => new ACL(permission, new Id('world', 'anyone'));
  switch (policy) {
    case 'open':
      return [anyone(Permission.ALL)];
    case 'creator-all-world-read':
      return [creator, anyone(Permission.READ)];
    case 'creator-only':
      return [creator];
  }
}

/** The numeric ZooKeeper error code of a client failure (or of its `cause`), or undefined. */
export function zkCode(error: unknown): number | undefined {
  if (error instanceof zookeeper.Exception) return error.getCode();
  if (error instanceof Error && error.cause !== undefined) return zkCode(error.cause);
  return undefined;
}

export function isCode(error: unknown, ...codes: number[]): boolean {
  const code = zkCode(error);
  return code !== undefined && codes.includes(code);
}

/** A ZooKeeper long (jute serialises it as 8 big-endian bytes) as a bigint. */
export function zkLong(value: unknown): bigint {
  if (Buffer.isBuffer(value) && value.length === 8) return value.readBigUInt64BE(0);
  throw new BackendError(`unexpected ZooKeeper long ${String(value)}`);
}

/** The open ACL, made once: a create without an ACL of its own uses it. */
export const OPEN = aclFor('open');

/** What a create is given: the node's path and mode, its data (default none) and ACL (default open). */
export type CreateArgs = [client: ZkClient, path: string, mode: number, data?: Buffer, acl?: zookeeper.ACL[]];

// The hot requests go straight to the client's connection manager where they can (see client/direct.ts).
export function createStart(...[client, path, mode, data = Buffer.alloc(0), acl = OPEN]: CreateArgs): Start<string> {
  return (done) => {
    const queue = directQueue(client);
    if (queue !== undefined && createsDirectly(data, acl)) createDirect(queue, path, data, acl, mode, done);
    else client.create(path, data, acl, mode, done);
  };
}

/**
 * Creates a queue entry and gives back its path and creation zxid (its fencing token): one CREATE2 when
 * baton hands the client's requests over itself (see client/direct.ts); otherwise the client's create, then
 * an `exists` for the zxid (a request more, for clients baton cannot hand requests to).
 */
export function createEntryStart(
  ...[client, path, mode, data = Buffer.alloc(0), acl = OPEN]: CreateArgs
): Start<{ path: string; czxid: bigint }> {
  return (done) => {
    const queue = directQueue(client);
    if (queue !== undefined && createsDirectly(data, acl)) {
      create2Direct(queue, path, data, acl, mode, (error, created) =>
        error ? done(error) : done(null, { path: created!.path, czxid: zkLong(created!.stat.czxid) }),
      );
      return;
    }
    client.create(path, data, acl, mode, (error, name) => {
      if (error) return done(error);
      client.exists(name, (failure, stat) => {
        if (failure) return done(failure);
        // Deleted by someone else before its stat could be read: gone, so the enqueue creates it again.
        if (!stat)
          return done(
            (ZkCode as unknown as { create(code: number, path: string): Error }).create(ZkCode.NO_NODE, name),
          );
        done(null, { path: name, czxid: zkLong(stat.czxid) });
      });
    });
  };
}

export function getChildrenStart(client: ZkClient, path: string): Start<{ children: string[]; stat: ZkStat }> {
  return (done) => {
    const queue = directQueue(client);
    if (queue !== undefined) getChildrenDirect(queue, path, done);
    else client.getChildren(path, (error, children, stat) => (error ? done(error) : done(null, { children, stat })));
  };
}

export function removeStart(client: ZkClient, path: string): Start<void> {
  return (done) => {
    const queue = directQueue(client);
    if (queue !== undefined) removeDirect(queue, path, done);
    else client.remove(path, -1, done);
  };
}

/**
 * A request the connection's member answers only while it is in touch with the leader: ZooKeeper's
 * `sync` when the client lets baton send it (see `syncDirect`), otherwise a plain read. `leader` says which.
 */
export function reachLeaderStart(client: ZkClient, path: string): { start: Start<unknown>; leader: boolean } {
  const queue = directQueue(client);
  if (queue === undefined) return { start: existsStart(client, path), leader: false };
  return { start: (done) => syncDirect(queue, path, done), leader: true };
}

export function existsStart(client: ZkClient, path: string): Start<ZkStat | null> {
  return (done) => client.exists(path, (error, stat) => (error ? done(error) : done(null, stat ?? null)));
}

/** Reads the node and, only if it exists, leaves a watch on it (getData sets none on a missing node). */
export function watchDataStart(
  client: ZkClient,
  path: string,
  watcher: (event: zookeeper.Event) => void,
): Start<boolean> {
  const watching = watchStatStart(client, path, watcher);
  return (done) => watching((error, stat) => (error ? done(error) : done(null, stat !== null)));
}

/**
 * Reads a node's stat and, if it exists, leaves a data watch on it (fired by its deletion or a change of
 * its data, not by its children). Null if the node does not exist (no watch is left then).
 */
export function watchStatStart(
  client: ZkClient,
  path: string,
  watcher: (event: zookeeper.Event) => void,
): Start<ZkStat | null> {
  return (done) => {
    const answered = (error: unknown, found?: { stat: ZkStat }): void => {
      if (error === null || error === undefined) done(null, found!.stat);
      else if (isCode(error, zookeeper.Exception.NO_NODE)) done(null, null);
      else done(error);
    };
    const queue = directQueue(client);
    if (queue !== undefined) watchDataDirect(queue, path, watcher, answered);
    else client.getData(path, watcher, (error, _data, stat) => answered(error, { stat }));
  };
}

/** Promise adapters; requests are queued in call order, so two calls made back to back are pipelined. */
export function create(...args: CreateArgs): Promise<string> {
  return started(createStart(...args));
}

export function getData(client: ZkClient, path: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    client.getData(path, (error, data) => (error ? reject(error) : resolve(data ?? Buffer.alloc(0))));
  });
}

/** The node's data and stat, or null if it does not exist. */
export function getDataStat(client: ZkClient, path: string): Promise<{ data: Buffer; stat: ZkStat } | null> {
  return new Promise((resolve, reject) => {
    client.getData(path, (error, data, stat) => {
      if (error === null || error === undefined) resolve({ data: data ?? Buffer.alloc(0), stat });
      else if (isCode(error, zookeeper.Exception.NO_NODE)) resolve(null);
      else reject(error);
    });
  });
}

export function getChildren(client: ZkClient, path: string): Promise<{ children: string[]; stat: ZkStat }> {
  return started(getChildrenStart(client, path));
}

export function exists(client: ZkClient, path: string): Promise<ZkStat | null> {
  return started(existsStart(client, path));
}

export function remove(client: ZkClient, path: string): Promise<void> {
  return started(removeStart(client, path));
}

/** Reads the node and, only if it exists, leaves a watch on it (getData sets none on a missing node). */
export function watchData(client: ZkClient, path: string, watcher: (event: zookeeper.Event) => void): Promise<boolean> {
  return started(watchDataStart(client, path, watcher));
}

/**
 * Lists a directory and leaves a watch that fires on its next change: a child watch if it exists, an
 * exists watch (fired by its creation) if it does not. Null when the directory does not exist.
 */
export async function watchChildren(
  client: ZkClient,
  path: string,
  watcher: (event: zookeeper.Event) => void,
): Promise<{ children: string[]; stat: ZkStat } | null> {
  for (;;) {
    const listed = await new Promise<{ children: string[]; stat: ZkStat } | null>((resolve, reject) => {
      client.getChildren(path, watcher, (error, children, stat) => {
        if (error === null || error === undefined) resolve({ children, stat });
        else if (isCode(error, zookeeper.Exception.NO_NODE)) resolve(null);
        else reject(error);
      });
    });
    if (listed !== null) return listed;
    const stat = await new Promise<ZkStat | null>((resolve, reject) => {
      client.exists(path, watcher, (error, found) => (error ? reject(error) : resolve(found ?? null)));
    });
    if (stat === null) return null;
    // Created between the two requests: list it again, now that it exists.
  }
}

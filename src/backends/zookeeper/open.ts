import zookeeper from 'node-zookeeper-client';

import { BackendError } from '../../../recipes/errors.js';
import { describeDialFailure } from '../dial.js';
import type { AclPolicy } from './acl.js';
import type { ZkClient } from './client.js';
import { sendDirectly } from './client/direct.js';
import { destroySocket, dropTornFrames, rememberSocketErrors, sendAuthFirst } from './client/instance.js';
import { compiledRecords } from './client/jute.js';
import { readRepliesWith } from './client/replies.js';
import { splitSetWatches } from './client/watch-frames.js';

export interface ZkDriverOptions {
  /** `host:port,host:port` */
  readonly hosts: string;
  /** Absolute znode path every queue lives under, e.g. `/baton`. */
  readonly namespace: string;
  readonly sessionTimeoutMs: number;
  readonly connectTimeoutMs: number;
  /** Sent before any request (and again after every reconnect, by the client). */
  readonly auth?: readonly { readonly scheme: string; readonly credentials: string }[];
  /** For every znode baton creates. */
  readonly acl?: AclPolicy;
  /** Gives up connecting when it aborts (the client is closed). */
  readonly signal?: AbortSignal | undefined;
}

/**
 * A client of baton's own, connected: with the fixes of `client/instance.ts` and, where the client's release
 * allows, baton's reply reader and direct requests. `openedAt` is when its session's open was sent.
 */
export async function openClient(options: ZkDriverOptions): Promise<{ client: ZkClient; openedAt: number }> {
  options.signal?.throwIfAborted();
  const client = zookeeper.createClient(options.hosts, {
    sessionTimeout: options.sessionTimeoutMs,
    spinDelay: 100,
    retries: 0,
  });
  dropTornFrames(client);
  sendAuthFirst(client);
  splitSetWatches(client);
  useCompiledRecords(client);
  for (const { scheme, credentials } of options.auth ?? []) client.addAuthInfo(scheme, Buffer.from(credentials));
  const openedAt = performance.now();
  await connected(client, options);
  return { client, openedAt };
}

/**
 * Waits for the first connection. On abort the caller is told at once, and the client is left to finish
 * its attempt: closed as soon as it connects (its new session with it), or at the connect timeout.
 * Tearing down a client in the middle of dialling is not safe in node-zookeeper-client (its close
 * writes to a socket that may not exist yet).
 */
function connected(client: ZkClient, options: ZkDriverOptions): Promise<void> {
  const { signal } = options;
  return new Promise((resolve, reject) => {
    let abandoned = false;
    const lastError = rememberSocketErrors(client);
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      client.removeListener('connected', onConnected);
      client.close();
      destroySocket(client); // close() only queues a request, which a server that never answered never reads
      const why = describeDialFailure(lastError(), options.connectTimeoutMs);
      if (!abandoned)
        reject(
          new BackendError(
            `could not connect to ZooKeeper at ${options.hosts} within ${options.connectTimeoutMs} ms: ${why}`,
            { cause: lastError() },
          ),
        );
    }, options.connectTimeoutMs);
    const onAbort = (): void => {
      abandoned = true;
      reject(signal!.reason);
    };
    const onConnected = (): void => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      if (abandoned) client.close();
      else resolve();
    };
    client.once('connected', onConnected);
    signal?.addEventListener('abort', onAbort, { once: true });
    client.connect();
  });
}

/**
 * On this client only (see client/jute.ts, client/replies.ts, client/direct.ts): baton reads its replies, with its compiled
 * records, and hands its hot requests straight to its connection manager. A client of another release
 * keeps its own reader and methods.
 */
function useCompiledRecords(client: ZkClient): void {
  const records = compiledRecords();
  if (records !== undefined && readRepliesWith(client, records)) sendDirectly(client, records);
}

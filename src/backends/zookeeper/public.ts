/**
 * What users see of the ZooKeeper backend: its `connect()` option keys and their types. In a module
 * that imports no client, so that a user's project needs no declarations of node-zookeeper-client.
 */
import type { AclPolicy } from './acl.js';

export type { AclPolicy } from './acl.js';

/** ZooKeeper credentials (the `auth` option of `connect`): sent before any request. */
export interface ZkAuth {
  /** `'digest'`, the only scheme baton sends. */
  readonly scheme: 'digest';
  /** `user:password`; never shown in an error message. */
  readonly credentials: string;
}

/** The `connect()` options only ZooKeeper reads. */
export interface ZookeeperConnectOptions {
  /** ZooKeeper: credentials sent before any request, e.g. `{ scheme: 'digest', credentials: 'user:password' }`. */
  readonly auth?: ZkAuth | readonly ZkAuth[];
  /**
   * ZooKeeper: the ACL of every znode baton creates (entries and their parent directories). With
   * `auth`, default `'creator-all-world-read'` (the creator may do everything, everyone may read, so
   * that `baton inspect` works); `'creator-only'` hides the queues too. Without `auth` only `'open'`
   * is possible (ZooKeeper knows a creator only by its credentials), and is the default.
   */
  readonly acl?: AclPolicy;
}

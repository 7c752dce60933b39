/** ZooKeeper's `connect()` options, `auth` and `acl`, checked. */
import { InvalidArgumentError } from '../../../recipes/errors.js';
import { oneOf } from '../option-checks.js';
import type { AclPolicy } from './acl.js';
import type { ZkAuth } from './public.js';

/** The credentials and ACL policy a ZooKeeper session is opened with. */
export interface ZkAccess {
  readonly auth: readonly ZkAuth[];
  readonly acl: AclPolicy;
}

/** Credentials are never echoed back in an error: only where they are and what is expected. */
export function zkAccess(auth: unknown, acl: unknown): ZkAccess {
  const list = auth === undefined ? [] : Array.isArray(auth) ? (auth as unknown[]) : [auth];
  for (const [index, item] of list.entries()) checkAuth(item, Array.isArray(auth) ? `auth[${index}]` : 'auth');
  if (list.length === 0 && (acl === 'creator-all-world-read' || acl === 'creator-only')) {
    throw new InvalidArgumentError(
      'acl',
      acl,
      '"open" unless auth credentials are given: ZooKeeper knows a creator only by its credentials',
    );
  }
  const policy = oneOf(acl, 'acl', list.length > 0 ? ['creator-all-world-read', 'creator-only', 'open'] : ['open']);
  return { auth: list as ZkAuth[], acl: policy };
}

function checkAuth(item: unknown, where: string): void {
  // Whatever was passed may be a secret (a string instead of an object): it is described, never shown.
  if (typeof item !== 'object' || item === null)
    throw new InvalidArgumentError(
      where,
      `(not shown, a ${typeof item})`,
      "an object such as { scheme: 'digest', credentials: 'user:password' }",
    );
  const { scheme, credentials } = item as Record<string, unknown>;
  if (scheme !== 'digest')
    throw new InvalidArgumentError(
      `${where}.scheme`,
      typeof scheme === 'string' && scheme.length <= 16 ? scheme : '(not shown)',
      '"digest"',
    );
  if (typeof credentials !== 'string' || !/^[^:]+:.+$/s.test(credentials)) {
    throw new InvalidArgumentError(
      `${where}.credentials`,
      '(not shown)',
      'a "user:password" string with a non-empty user and password',
    );
  }
}

/** `auth` and `acl` go with zk: URLs only (etcd has credentials of its own). */
export function refuseZkAccessElsewhere(access: ZkAccess, scheme: string): void {
  if (access.auth.length === 0 && access.acl === 'open') return;
  throw new InvalidArgumentError(
    'auth/acl',
    `${scheme}:`,
    `zk: URLs only; on etcd pass etcd: { auth: { username, password }, credentials } instead`,
  );
}

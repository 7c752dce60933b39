/**
 * Every backend baton has, one line each: `connect`, the URL parser, the CLI and
 * `baton-locks/testing` find a backend here by its URL's scheme. A new backend is a folder with an
 * `index.ts` exporting its `Backend` descriptor, imported below and named in `BACKENDS`.
 */
import type { Backend } from './backend.js';
import { etcd } from './etcd/index.js';
import { memory } from './memory/index.js';
import { mysql } from './mysql/index.js';
import { postgres } from './postgres/index.js';
import { redis } from './redis/index.js';
import { zookeeper } from './zookeeper/index.js';

/** The backends, in the order messages list them. */
export const BACKENDS: readonly Backend[] = [zookeeper, etcd, postgres, mysql, redis, memory];

/** The backend a URL scheme (without its colon, any case) names, if any. */
export function backendForScheme(scheme: string): Backend | undefined {
  const name = scheme.toLowerCase();
  return BACKENDS.find((backend) => backend.schemes.includes(name) || (backend.aliases ?? []).includes(name));
}

/** What users see of the etcd backend: its `connect()` option keys and their types. */
import type { IOptions } from 'etcd3';

/** etcd client settings passed through to etcd3 (the `etcd` option of `connect`). */
export type EtcdClientOptions = Pick<IOptions, 'auth' | 'credentials' | 'grpcOptions'>;

/** The `connect()` options only etcd reads. */
export interface EtcdConnectOptions {
  /**
   * etcd: the lease TTL asked of the server, in whole seconds (etcd grants at least its minimum, about
   * 1.5 election timeouts: 2 s with etcd's defaults). Default: `sessionTimeoutMs` rounded up to whole
   * seconds when that is given, else 10.
   */
  readonly ttlSeconds?: number;
  /**
   * etcd: passed through to etcd3 (`auth: { username, password }`, `credentials` for TLS,
   * `grpcOptions`). Default: none (plain text, no auth).
   */
  readonly etcd?: EtcdClientOptions;
}

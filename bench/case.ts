import type { Report } from './report.js';
import type { Summary } from './stats.js';

/** What every benchmark case gets from the runner. */
export interface Context {
  /** `--quick`: fewer and shorter blocks, for a look during development. */
  readonly quick: boolean;
  /** The numbers of waiters (and of locks, of sessions) the scale cases run, smallest first (`--n`). */
  readonly scaleN: readonly number[];
  /** The parts of the scale cases to run (`--scale-parts`): waiters on one lock, locks held by one session, sessions in one process. */
  readonly scaleParts: ReadonlySet<'waiters' | 'held' | 'sessions'>;
  /**
   * Alternating blocks of the uncontended cycles: how many, cycles per block, and the cycles each kind
   * runs before its first block (see `WARMUP_CYCLES`).
   */
  readonly size: { readonly blocks: number; readonly perBlock: number; readonly warmup: number };
  /** The ZooKeeper connect string, the server started on first use (or BATON_BENCH_ZK). */
  zk(): Promise<string>;
  /** The etcd endpoint `http://host:port`, started on first use (or BATON_BENCH_ETCD). */
  etcd(): Promise<string>;
  /** A PostgreSQL superuser's URL, the server (fsync on) started on first use (or BATON_BENCH_POSTGRES). */
  postgres(): Promise<string>;
  /** The Redis URL `redis://host:port`, the server started on first use (or BATON_BENCH_REDIS). */
  redis(): Promise<string>;
  /** A MariaDB user's URL `mysql://user:password@host:port/db`, started on first use (or BATON_BENCH_MYSQL). */
  mysql(): Promise<string>;
  /** The PID of a server this run started (for its CPU time); undefined for an external one. */
  serverPid(server: 'zk' | 'etcd' | 'postgres' | 'redis' | 'mysql'): number | undefined;
  readonly report: Report;
  /** Figures one case leaves for a later one to compare with (the memory cycle beside ZooKeeper's). */
  readonly figures: Map<string, Summary>;
}

/** One benchmark: `<backend>.<what>`, selected by `--only` with either part or the whole name. */
export interface Case {
  readonly name: string;
  run(context: Context): Promise<unknown>;
}

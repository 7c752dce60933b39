/**
 * How many acquisitions each of the contract suites' 4 contenders makes. `npm test` runs a quarter of
 * the full counts (every check the same, fewer rounds); BATON_CONTENTION_FULL=1 runs the full ones
 * (docs/testing.md).
 */
const FULL = process.env['BATON_CONTENTION_FULL'] === '1';

export const CONTENTION_WORKERS = 4;

/**
 * Acquisitions per contender, by contract test. The read/write count stays a multiple of 6 (one downgrade
 * in 6). The semaphore keeps its full count: its check that the permits were once all in use at the same
 * time failed at a quarter (on a ZooKeeper ensemble and an etcd cluster, in one clean-clone run).
 */
export const CONTENTION_COUNTS = {
  mutex: FULL ? 200 : 50,
  readWrite: FULL ? 150 : 36,
  semaphore: 100,
  multiLock: FULL ? 200 : 50,
} as const;

/**
 * What each backend adds to `baton-locks/testing`, one line each: its counters, probe accessors and
 * fault hooks, and the types of what they show (its folder's `testing.ts`, whose default export, the
 * kit, `export *` leaves out). The testing module re-exports all of it.
 */
export * from './etcd/testing.js';
export * from './memory/expire.js';
export * from './mysql/testing.js';
export * from './postgres/testing.js';
export * from './redis/testing.js';
export * from './zookeeper/testing.js';

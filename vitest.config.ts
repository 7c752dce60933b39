import { fileURLToPath } from 'node:url';

import { configDefaults, defineConfig } from 'vitest/config';

/**
 * Files that run two at a time, before the others: no fault and no timing that another file's load
 * could upset (units, the package, the CLI commands, the API's checks, the model runs, the harness's
 * own servers).
 */
const SIDE_BY_SIDE = [
  'test/units/**/*.test.ts',
  'test/package/**/*.test.ts',
  'test/harness/servers/{harness,interrupt,server-source}.test.ts',
  'test/model/*.test.ts',
  'test/api/hostile-input.test.ts',
  'test/api/recipes/{hold-limit,participants-peers,participants-timeout}.test.ts',
  'test/api/observability/{otel,otel-metrics,prometheus}.test.ts',
  'test/cli/{elect,help,inspect,lock,once,production-modules,release,version}.test.ts',
  'test/api/{connect,connect-abort,foreign-entries,lock-events,metrics}.test.ts',
  'test/api/recipes/{once,participants}.test.ts',
  'test/api/{force-release,guarded}/memory.test.ts',
  'test/api/fence/schema-command.fence.test.ts',
  'test/contract/memory.test.ts',
  'test/backends/mysql/{charsets,sql-mode}.mysql.test.ts',
  'test/backends/postgres/password.postgres.test.ts',
];

export default defineConfig({
  resolve: {
    // The examples import the package by its name, as users do.
    alias: [
      { find: /^baton-locks$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
      { find: /^baton-locks\/fence$/, replacement: fileURLToPath(new URL('./src/fence/index.ts', import.meta.url)) },
      { find: /^baton-locks\/metrics$/, replacement: fileURLToPath(new URL('./src/metrics.ts', import.meta.url)) },
      { find: /^baton-locks\/otel$/, replacement: fileURLToPath(new URL('./src/otel.ts', import.meta.url)) },
      { find: /^baton-locks\/testing$/, replacement: fileURLToPath(new URL('./src/testing.ts', import.meta.url)) },
    ],
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    globalSetup: ['test/harness/global-setup.ts'],
    projects: [
      {
        extends: true,
        test: { name: 'two at a time', include: SIDE_BY_SIDE, maxWorkers: 2, sequence: { groupOrder: 0 } },
      },
      // One file at a time: two at once on 2 cores made timing tests of one file fail under the load of
      // the other (a PostgreSQL contention test's connects, a ZooKeeper ensemble's leader kill).
      {
        extends: true,
        test: {
          name: 'one at a time',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...SIDE_BY_SIDE],
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});

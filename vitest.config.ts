import { fileURLToPath } from 'node:url';

import { defineConfig } from 'vitest/config';

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
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // One file at a time: two at once on 2 cores made timing tests of one file fail under the load of
    // the other (a PostgreSQL contention test's connects, a ZooKeeper ensemble's leader kill).
    // `--maxWorkers=2` runs two at a time by hand.
    maxWorkers: 1,
    globalSetup: ['test/harness/global-setup.ts'],
  },
});

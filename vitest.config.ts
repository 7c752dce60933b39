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
    // Two files at a time even on 2 cores (vitest's default there is one): most of a file's time is
    // spent waiting for servers, sessions and timeouts, not computing. `--maxWorkers=1` runs one at a time.
    maxWorkers: 2,
    globalSetup: ['test/harness/global-setup.ts'],
  },
});

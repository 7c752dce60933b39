import { defineConfig } from 'vitest/config';

/**
 * The run that interrupt.test.ts starts and interrupts: servers of the main process (this folder's
 * global setup) and of a test worker (slow.fixture.ts), a port claimed by another worker
 * (claims.fixture.ts), in a temp dir the test chooses (TMPDIR).
 */
export default defineConfig({
  test: {
    include: ['test/harness/servers/interrupt/{slow,claims}.fixture.ts'],
    // Both files at once: each waits until the run is interrupted.
    maxWorkers: 2,
    globalSetup: ['test/harness/servers/interrupt/global-setup.ts'],
    pool: 'forks',
    testTimeout: 600_000,
    hookTimeout: 120_000,
  },
});

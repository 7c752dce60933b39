import { writeFileSync } from 'node:fs';

import { it } from 'vitest';

import { freePort } from '../ports.js';

/**
 * A worker that only claims a port, as a test with a proxy of its own does, and starts no server: its
 * claim must go too when the run is interrupted (the claim's own 'exit' handler does not run then).
 */
it('claims a port and runs until interrupted', async () => {
  await freePort();
  writeFileSync(`${process.env['BATON_INTERRUPT_READY']!}.claims`, String(process.pid));
  await new Promise((resolve) => setTimeout(resolve, 300_000));
});

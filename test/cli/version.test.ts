import { readFileSync } from 'node:fs';

import { describe, expect, it } from 'vitest';

import { runBaton } from '../harness/run-cli.js';

describe('baton --version', () => {
  it("prints the package's version and exits 0", async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    for (const flag of ['--version', '-V']) {
      // From the sources under tsx, as `npm run demo` runs it; the other CLI tests run the run's compiled copy.
      const result = await runBaton([flag], {}, true);
      expect(result.code).toBe(0);
      expect(result.stdout.trim()).toBe(version);
    }
  });
});

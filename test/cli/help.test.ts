import { describe, expect, it } from 'vitest';

import { BACKENDS } from '../../src/backends/registry.js';
import { runBaton } from '../harness/run-cli.js';

/** The commands that open a session, and so read credentials from the environment. */
const SESSION_COMMANDS = ['lock', 'elect', 'once', 'release', 'inspect'];

describe('baton <command> --help', () => {
  it.each(SESSION_COMMANDS)(
    '%s names where every backend reads its credentials, and an example URL of each that gives one',
    async (command) => {
      const { code, stdout } = await runBaton([command, '--help']);
      expect(code).toBe(0);
      const help = stdout.replace(/\s+/g, ' ');
      for (const backend of BACKENDS) {
        if (backend.cli.credentialsHelp !== undefined) expect(help).toContain(backend.cli.credentialsHelp);
        const example = backend.cli.example?.('myapp');
        if (example !== undefined) expect(help).toContain(example);
      }
    },
  );
});

import { describe, expect, it } from 'vitest';

import { runBaton } from '../harness/run-cli.js';

/** The commands that open a session, and so read credentials from the environment. */
const SESSION_COMMANDS = ['lock', 'elect', 'once', 'release', 'inspect'];

/** Where each backend's credentials come from (docs/security.md), written out: not read from the code. */
const CREDENTIALS = [
  'BATON_ZK_DIGEST',
  'BATON_ETCD_USER',
  'BATON_ETCD_PASSWORD',
  'PGPASSWORD',
  'MYSQL_PWD',
  'BATON_REDIS_USER',
  'BATON_REDIS_PASSWORD',
];
/** An example URL of each backend a user may have in front of them. */
const EXAMPLES = ['zk://', 'etcd://', 'postgres://', 'mysql://', 'redis://'];

describe('baton <command> --help', () => {
  it.each(SESSION_COMMANDS)('%s names where every backend reads its credentials, and example URLs', async (command) => {
    const { code, stdout } = await runBaton([command, '--help']);
    expect(code).toBe(0);
    const help = stdout.replace(/\s+/g, ' ');
    for (const variable of CREDENTIALS) expect(help).toContain(variable);
    for (const example of EXAMPLES) expect(help).toContain(example);
  });
});

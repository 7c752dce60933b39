import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';

import { afterAll, describe, expect, it } from 'vitest';

import { makeTempDir, removeTempDir } from '../harness/servers/process.js';

const REGISTER = new URL('../harness/module-trace/register.mjs', import.meta.url).href;
const dir = makeTempDir('baton-trace-');
afterAll(() => removeTempDir(dir));

/** Runs `baton` from the sources with every module it loads traced; the exit code and the modules loaded. */
async function traced(args: readonly string[], name: string): Promise<{ code: number; modules: string[] }> {
  const file = join(dir, `${name}.txt`);
  let code = 0;
  try {
    await promisify(execFile)(process.execPath, ['--import', 'tsx', '--import', REGISTER, 'src/cli.ts', ...args], {
      timeout: 90_000,
      env: { ...process.env, BATON_MODULE_TRACE: file },
    });
  } catch (error) {
    code = (error as { code: number }).code;
  }
  return { code, modules: readFileSync(file, 'utf8').split('\n').filter(Boolean) };
}

/** `baton-locks/testing` and the backends' test kits: no production command may load one. */
const TEST_MODULE = /\/src\/(testing|backends\/[^/]+\/testing)\.ts$/;

describe('the production command', () => {
  // Every subcommand, on each backend where it makes a connection (unreachable ones: the connect fails fast).
  it.each([
    ['demo', ['demo', '--workers', '3', '--ticks', '1', '--cut-at', '1'], 0],
    ['inspect-memory', ['inspect', 'memory://trace', 'a'], 0],
    ['schema-print', ['schema', '--print', 'postgres://u@127.0.0.1:5432/db'], 0],
    ['inspect-zk', ['inspect', 'zk://127.0.0.1:1/x', 'a', '--connect-timeout', '300'], 1],
    ['inspect-etcd', ['inspect', 'etcd://127.0.0.1:1/x', 'a', '--connect-timeout', '300'], 1],
    ['inspect-postgres', ['inspect', 'postgres://u@127.0.0.1:1/db', 'a', '--connect-timeout', '300'], 1],
    ['inspect-redis', ['inspect', 'redis://127.0.0.1:1', 'a', '--connect-timeout', '300'], 1],
    ['version', ['--version'], 0],
  ] as const)(
    '%s loads no test module',
    async (name, args, exitCode) => {
      const { code, modules } = await traced(args, name);
      expect(code).toBe(exitCode);
      // The trace saw the command and the registry it reads: an empty trace would prove nothing.
      expect(modules.some((url) => url.endsWith('/src/cli.ts'))).toBe(true);
      expect(modules.some((url) => url.endsWith('/src/backends/registry.ts'))).toBe(true);
      expect(modules.filter((url) => TEST_MODULE.test(url))).toEqual([]);
    },
    120_000,
  );
});

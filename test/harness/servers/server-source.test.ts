import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

import { describe, expect, it } from 'vitest';

import { chooseServerSource, type ServerSituation } from './install.js';

/** A situation whose engine probe counts how often it was asked. */
function situation(here: Omit<ServerSituation, 'engineAnswers'> & { engine: boolean }): {
  here: ServerSituation;
  asked: () => number;
} {
  let asked = 0;
  const engineAnswers = (): Promise<boolean> => {
    asked += 1;
    return Promise.resolve(here.engine);
  };
  return { here: { ...here, engineAnswers }, asked: () => asked };
}

describe('where the test servers come from', () => {
  it.each([
    [
      'running servers named by the environment',
      { external: true, binaries: false, canInstall: false, engine: true },
      'external',
      0,
    ],
    [
      'local binaries, whether or not an engine answers',
      { external: false, binaries: true, canInstall: false, engine: true },
      'local',
      0,
    ],
    [
      'no binaries, root with apt-get (CI): installed, not containers',
      { external: false, binaries: false, canInstall: true, engine: true },
      'install',
      0,
    ],
    [
      'no binaries, an engine answers (a developer on macOS or Windows)',
      { external: false, binaries: false, canInstall: false, engine: true },
      'containers',
      1,
    ],
  ] as const)('%s', async (_case, given, expected, probes) => {
    const { here, asked } = situation(given);
    expect(await chooseServerSource(here)).toBe(expected);
    expect(asked(), 'the engine is asked only when nothing before it applies').toBe(probes);
  });

  it('no binaries, no way to install them and no engine: an error saying how', async () => {
    const { here } = situation({ external: false, binaries: false, canInstall: false, engine: false });
    const error = (await chooseServerSource(here).catch((e: unknown) => e)) as Error;
    expect(error.message).toMatch(
      /^missing: zookeeper etcd-server postgresql mariadb-server redis-server, and no container engine answered/,
    );
    expect(error.message).toContain(
      'sudo apt-get install -y zookeeper etcd-server postgresql mariadb-server redis-server',
    );
    expect(error.message).toContain(
      'BATON_TEST_ZK=host:port BATON_TEST_ETCD=http://host:port BATON_TEST_POSTGRES=postgres://user@host:port/db BATON_TEST_MYSQL=mysql://user:password@host:port/db BATON_TEST_REDIS=redis://host:port npm test',
    );
    expect(error.message).toContain('start a container engine');
  });

  it('testcontainers is loaded only when the engine is asked', async () => {
    const script = [
      "import { createRequire } from 'node:module';",
      "const { chooseServerSource } = await import('./test/harness/servers/install.ts');",
      "const { containerEngineAnswers } = await import('./test/harness/servers/containers.ts');",
      "const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((p) => p.includes('/node_modules/testcontainers/'));",
      'const source = await chooseServerSource({ external: false, binaries: true, canInstall: false, engineAnswers: containerEngineAnswers });',
      'const before = loaded();',
      'await containerEngineAnswers(5_000);',
      'console.log(JSON.stringify({ source, before, after: loaded() }));',
      'process.exit(0);',
    ].join('\n');
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { timeout: 30_000 },
    );
    expect(JSON.parse(stdout)).toEqual({ source: 'local', before: false, after: true });
  });
});

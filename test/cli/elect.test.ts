import { readFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { LeaderElection } from '../../recipes/election.js';
import { etcdFixture } from '../harness/backends/etcd.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { useScope } from '../harness/backends/scope.js';
import { zkFixture } from '../harness/backends/zookeeper.js';
import { layouts } from '../harness/faults/layouts.js';
import { makeTempDir, removeTempDir } from '../harness/servers/process.js';
import { TcpProxy } from '../harness/servers/proxy.js';
import { eventually } from '../harness/wait.js';
import { killAllBatons, runToEnd, startBaton } from './spawn-baton.js';

const dir = makeTempDir('baton-elect-test-');
afterAll(() => removeTempDir(dir));
afterEach(killAllBatons);

function electCommandSuite(getFixture: () => Fixture): void {
  describe(`baton elect on ${getFixture().name}`, { timeout: 60_000 }, () => {
    const scope = useScope(getFixture);
    const url = (): string => scope.fixture.url(scope.namespace);

    it('waits for the current leader, then runs the command as leader and exits with its status', async () => {
      const other = await new LeaderElection(await scope.open(), 'scheduler', { id: 'other' }).campaign();
      const baton = startBaton([
        'elect',
        url(),
        'scheduler',
        '--id',
        'worker-7',
        '--',
        'sh',
        '-c',
        'echo "leader=$BATON_LEADER_ID token=$BATON_FENCING_TOKEN name=$BATON_LOCK_NAME session=$BATON_SESSION"; exit 5',
      ]);
      const observer = new LeaderElection(await scope.open(), 'scheduler', { id: 'observer' });
      await eventually('baton campaigns', async () => (await observer.participants()).length === 2, 20_000);
      expect(baton.stdout()).toBe('');
      await other.resign();
      expect(await baton.exited(), baton.stderr()).toBe(5);
      const match = /leader=worker-7 token=(\d+) name=scheduler session=(\S+)/.exec(baton.stdout());
      expect(match, baton.stdout()).not.toBeNull();
      expect(BigInt(match![1]!)).toBeGreaterThan(other.fencingToken);
    });
  });
}

electCommandSuite(() => zkFixture('zkStandalone'));
electCommandSuite(() => etcdFixture('etcdStandalone'));

describe('baton elect: --forever, usage and a lost leadership (ZooKeeper)', { timeout: 90_000 }, () => {
  const scope = useScope(() => zkFixture('zkStandalone'));
  const url = (): string => scope.fixture.url(scope.namespace);

  it('--forever campaigns again after the command ends, until a signal stops it', async () => {
    const log = path.join(dir, 'terms.log');
    const baton = startBaton([
      'elect',
      url(),
      'scheduler',
      '--id',
      'w1',
      '--forever',
      '--',
      'sh',
      '-c',
      `echo "term $BATON_FENCING_TOKEN" >> ${log}; exit 1`,
    ]);
    const terms = (): string[] => {
      try {
        return readFileSync(log, 'utf8').trim().split('\n');
      } catch {
        return [];
      }
    };
    await eventually('three terms', () => terms().length >= 3, 30_000);
    const tokens = terms().map((line) => BigInt(line.split(' ')[1]!));
    expect(tokens[1]! > tokens[0]! && tokens[2]! > tokens[1]!).toBe(true);
    // A signal while a term's command runs ends baton with the command's status (docs/cli.md); signal
    // once the third term has resigned, when baton is in its back-off pause and no command runs.
    const observer = new LeaderElection(await scope.open(), 'scheduler', { id: 'observer' });
    await eventually('the third term resigned', async () => (await observer.participants()).length === 0, 20_000);
    baton.process.kill('SIGINT');
    expect(await baton.exited(), baton.stderr()).toBe(130);
  });

  it('exits 64 without --id or with a bad name', async () => {
    expect((await runToEnd(['elect', url(), 'scheduler', '--', 'true'])).code).toBe(64);
    expect((await runToEnd(['elect', url(), 'bad//name', '--id', 'x', '--', 'true'])).code).toBe(64);
  });

  it('stops the command when leadership is lost through a cut connection; exit 125', async () => {
    const layout = layouts.find((candidate) => candidate.name === 'zkStandalone')!;
    const proxy = await TcpProxy.start({ port: layout.port() });
    try {
      const baton = startBaton([
        'elect',
        layout.url(proxy.address, scope.namespace),
        'scheduler',
        '--id',
        'cut',
        '--session-timeout',
        String(layout.timeoutMs()),
        '--',
        'sh',
        '-c',
        'trap "echo stopped; exit 0" TERM; echo ready; while :; do sleep 0.05; done',
      ]);
      await baton.printed('ready');
      proxy.blackhole();
      expect(await baton.exited(), baton.stderr()).toBe(125);
      expect(baton.stdout()).toContain('stopped');
    } finally {
      await proxy.close();
    }
    const next = await new LeaderElection(await scope.open(), 'scheduler', { id: 'next' }).campaign({
      timeoutMs: 20_000,
    });
    await next.resign();
  });
});

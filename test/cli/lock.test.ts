import { writeFileSync } from 'node:fs';
import path from 'node:path';

import { afterAll, afterEach, describe, expect, it } from 'vitest';

import { FairMutex } from '../../recipes/mutex.js';
import { ReadWriteLock } from '../../recipes/rw-lock.js';
import { Semaphore } from '../../recipes/semaphore.js';
import { etcdFixture } from '../harness/backends/etcd.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { mysqlFixture } from '../harness/backends/mysql.js';
import { postgresFixture } from '../harness/backends/postgres.js';
import { redisFixture } from '../harness/backends/redis.js';
import { useScope } from '../harness/backends/scope.js';
import { zkFixture } from '../harness/backends/zookeeper.js';
import { layouts } from '../harness/faults/layouts.js';
import { expectQueueLength } from '../harness/internals.js';
import { freePort } from '../harness/servers/ports.js';
import { makeTempDir, removeTempDir } from '../harness/servers/process.js';
import { TcpProxy } from '../harness/servers/proxy.js';
import { eventually } from '../harness/wait.js';
import { alive, killAllBatons, runToEnd, startBaton } from './spawn-baton.js';

const dir = makeTempDir('baton-lock-test-');
afterAll(() => removeTempDir(dir));
afterEach(killAllBatons);
let files = 0;
/** A path a test's command waits for: the test creates it to let the command finish. */
const doneFile = (): string => path.join(dir, `done-${(files += 1)}`);
/** A command that prints its environment, waits for `done` to exist, then exits 7. */
const reportAndWait = (done: string): string[] => [
  'sh',
  '-c',
  `echo "token=$BATON_FENCING_TOKEN name=$BATON_LOCK_NAME session=$BATON_SESSION"; while [ ! -e ${done} ]; do sleep 0.05; done; exit 7`,
];

/** The session timeout the fixture's sessions use, for baton's command line. */
function sessionTimeout(fixture: Fixture): string {
  const { sessionTimeoutMs, ttlSeconds } = fixture.options;
  return String(sessionTimeoutMs ?? (ttlSeconds ?? 10) * 1_000);
}

function lockCommandSuite(getFixture: () => Fixture): void {
  describe(`baton lock on ${getFixture().name}`, { timeout: 60_000 }, () => {
    const scope = useScope(getFixture);
    const lock = (...args: string[]): string[] => [
      'lock',
      scope.fixture.url(scope.namespace),
      ...args,
      '--session-timeout',
      sessionTimeout(scope.fixture),
    ];

    it('runs the command holding the lock, with its token, name and session, and exits with its status', async () => {
      const done = doneFile();
      const baton = startBaton([...lock('jobs/nightly'), '--', ...reportAndWait(done)]);
      await baton.printed('token=');
      const observer = await scope.open();
      const [holder] = await new FairMutex(observer, 'jobs/nightly').participants();
      const match = /token=(\d+) name=(\S+) session=(\S+)/.exec(baton.stdout())!;
      expect(match[2]).toBe('jobs/nightly');
      expect(holder!.role).toBe('holder');
      expect(holder!.fencingToken.toString()).toBe(match[1]);
      expect(holder!.sessionId).toContain(match[3]);
      writeFileSync(done, '');
      expect(await baton.exited()).toBe(7);
      await expectQueueLength(observer, 'jobs/nightly', 0);
    });

    it('--try exits 75 at once on a busy lock without running the command; --timeout exits 124', async () => {
      const holder = await new FairMutex(await scope.open(), 'jobs').acquire();
      const tried = await runToEnd([...lock('jobs', '--try'), '--', 'sh', '-c', 'echo ran']);
      expect(tried.code, tried.stderr).toBe(75);
      expect(tried.stdout).toBe('');
      expect(tried.stderr).toMatch(/"jobs" is busy/);
      const timed = await runToEnd([...lock('jobs', '--timeout', '300'), '--', 'sh', '-c', 'echo ran']);
      expect(timed.code, timed.stderr).toBe(124);
      expect(timed.stdout).toBe('');
      expect(timed.stderr).toMatch(/timed out after 300 ms/);
      await holder.release();
    });
  });
}

lockCommandSuite(() => zkFixture('zkStandalone'));
lockCommandSuite(() => etcdFixture('etcdStandalone'));
lockCommandSuite(postgresFixture);
lockCommandSuite(mysqlFixture);
lockCommandSuite(redisFixture);

describe('baton lock: kinds, permits, usage, signals and losses (ZooKeeper)', { timeout: 60_000 }, () => {
  const scope = useScope(() => zkFixture('zkStandalone'));
  const url = (): string => scope.fixture.url(scope.namespace);

  it('--kind read shares with a held read lock, --kind write waits for it', async () => {
    const read = await new ReadWriteLock(await scope.open(), 'cfg').readLock.acquire();
    expect((await runToEnd(['lock', url(), 'cfg', '--kind', 'read', '--try', '--', 'true'])).code).toBe(0);
    expect((await runToEnd(['lock', url(), 'cfg', '--kind', 'write', '--try', '--', 'true'])).code).toBe(75);
    await read.release();
    expect((await runToEnd(['lock', url(), 'cfg', '--kind', 'write', '--try', '--', 'true'])).code).toBe(0);
  });

  it('--permits N --count K takes K permits of the semaphore', async () => {
    const one = await new Semaphore(await scope.open(), 'pool', { permits: 2 }).acquire();
    expect(
      (await runToEnd(['lock', url(), 'pool', '--permits', '2', '--count', '2', '--try', '--', 'true'])).code,
    ).toBe(75);
    expect((await runToEnd(['lock', url(), 'pool', '--permits', '2', '--try', '--', 'sh', '-c', 'exit 3'])).code).toBe(
      3,
    );
    await one.release();
  });

  it('exits 64 for bad usage before connecting, 69 when the server cannot be reached, 127 for a missing command', async () => {
    const usage = [
      ['--count', '2', '--', 'true'],
      ['--try', '--timeout', '5', '--', 'true'],
      ['--kind', 'both', '--', 'true'],
      ['--kind', 'read', '--permits', '2', '--', 'true'],
      ['--permits', '2', '--count', '3', '--', 'true'],
      ['--bogus', '--', 'true'],
      ['--timeout', 'soon', '--', 'true'],
    ];
    // An unreachable URL: usage is checked before any connection is tried.
    const nowhere = `zk://127.0.0.1:${await freePort()}/x`;
    for (const args of usage) {
      const result = await runToEnd(['lock', nowhere, 'jobs', ...args]);
      expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(64);
    }
    expect((await runToEnd(['lock', nowhere, 'bad//name', '--', 'true'])).code).toBe(64);
    expect((await runToEnd(['lock', nowhere, 'jobs'])).code).toBe(64);
    const unreachable = await runToEnd(['lock', nowhere, 'jobs', '--connect-timeout', '500', '--', 'true']);
    expect(unreachable.code, unreachable.stderr).toBe(69);
    const missing = await runToEnd(['lock', url(), 'jobs', '--', 'no-such-command-here']);
    expect(missing.code).toBe(127);
    expect((await runToEnd(['lock', url(), 'jobs', '--', 'sh', '-c', 'kill -KILL $$'])).code).toBe(137);
  });

  it('passes SIGTERM and SIGINT to the command and exits with its status; the lock is free after', async () => {
    for (const [signal, status] of [
      ['SIGTERM', 42],
      ['SIGINT', 43],
      ['SIGHUP', 44],
    ] as const) {
      const trap = signal.slice(3);
      const baton = startBaton([
        'lock',
        url(),
        'jobs',
        '--',
        'sh',
        '-c',
        `trap "echo got-${trap}; exit ${status}" ${trap}; echo ready; while :; do sleep 0.05; done`,
      ]);
      await baton.printed('ready');
      baton.process.kill(signal);
      expect(await baton.exited(), baton.stderr()).toBe(status);
      expect(baton.stdout()).toContain(`got-${trap}`);
    }
    const free = await new FairMutex(await scope.open(), 'jobs').tryAcquire();
    expect(free).not.toBeNull();
    await free!.release();
  });

  it('a signal while waiting for the lock gives up the wait (128+n) and withdraws the entry', async () => {
    const session = await scope.open();
    const holder = await new FairMutex(session, 'jobs').acquire();
    const baton = startBaton(['lock', url(), 'jobs', '--', 'sh', '-c', 'echo ran']);
    const mutex = new FairMutex(session, 'jobs');
    await eventually('baton queued', async () => (await mutex.participants()).length === 2, 20_000);
    baton.process.kill('SIGTERM');
    expect(await baton.exited()).toBe(143);
    expect(baton.stdout()).toBe('');
    await expectQueueLength(session, 'jobs', 1);
    await holder.release();
  });

  it('a lock lost through a cut connection stops the command with SIGTERM, then SIGKILL after --grace; exit 125', async () => {
    const layout = layouts.find((candidate) => candidate.name === 'zkStandalone')!;
    const timeoutMs = String(layout.timeoutMs());
    for (const [command, grace] of [
      ['trap "echo stopped; exit 0" TERM; echo ready $$; while :; do sleep 0.05; done', '10000'],
      ['trap "echo ignored" TERM; echo ready $$; while :; do sleep 0.05; done', '300'],
    ] as const) {
      const proxy = await TcpProxy.start({ port: layout.port() });
      try {
        const baton = startBaton([
          'lock',
          layout.url(proxy.address, scope.namespace),
          'jobs',
          '--session-timeout',
          timeoutMs,
          '--grace',
          grace,
          '--',
          'sh',
          '-c',
          command,
        ]);
        await baton.printed('ready');
        const pid = Number(/ready (\d+)/.exec(baton.stdout())![1]);
        proxy.blackhole();
        expect(await baton.exited(), baton.stderr()).toBe(125);
        expect(baton.stderr()).toMatch(/no longer held|stopping the command/);
        expect(alive(pid)).toBe(false);
        expect(baton.stdout()).toContain(grace === '300' ? 'ignored' : 'stopped');
      } finally {
        await proxy.close();
      }
    }
    // The server expires the cut sessions: the lock is granted again.
    const again = await new FairMutex(await scope.open(), 'jobs').acquire({ timeoutMs: 20_000 });
    await again.release();
  });
});

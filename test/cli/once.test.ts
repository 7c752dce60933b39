import { afterEach, describe, expect, it } from 'vitest';

import { FairMutex } from '../../recipes/mutex.js';
import { ONCE_RECORD, periodOf } from '../../recipes/once.js';
import { etcdFixture } from '../harness/backends/etcd.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { useScope } from '../harness/backends/scope.js';
import { zkFixture } from '../harness/backends/zookeeper.js';
import { killAllBatons, runToEnd } from './spawn-baton.js';

afterEach(killAllBatons);
const DAY = 86_400_000;
const SAY_PERIOD = ['sh', '-c', 'echo "period=$BATON_PERIOD token=$BATON_FENCING_TOKEN name=$BATON_LOCK_NAME"'];

function onceCommandSuite(getFixture: () => Fixture): void {
  describe(`baton once on ${getFixture().name}`, { timeout: 90_000 }, () => {
    const scope = useScope(getFixture);
    const once = (...args: string[]): string[] => ['once', scope.fixture.url(scope.namespace), ...args];
    /** Deletes the job's record, so that nothing is left on the store. */
    const clear = async (job: string): Promise<void> => {
      await new FairMutex(await scope.open(), job).withLock((lock) => lock.guarded.delete(ONCE_RECORD));
    };

    it('runs the command once per period (exit 0, BATON_PERIOD set); the next call skips it (exit 80)', async () => {
      const first = await runToEnd([...once('eod', '--period', 'P1D'), '--', ...SAY_PERIOD]);
      expect(first.code).toBe(0);
      expect(first.stdout).toContain(`period=${periodOf(Date.now(), DAY).name} token=`);
      expect(first.stdout).toContain('name=eod');
      const second = await runToEnd([...once('eod', '--period', String(DAY)), '--', ...SAY_PERIOD]);
      expect(second.code).toBe(80);
      expect(second.stdout).toBe('');
      expect(second.stderr).toContain('already done');
      await clear('eod');
    });

    it('a failed command exits with its status and is run again (retry); with --on-failure skip it is not', async () => {
      const fail = ['sh', '-c', 'exit 3'];
      expect((await runToEnd([...once('job', '--period', 'P1D'), '--', ...fail])).code).toBe(3);
      expect((await runToEnd([...once('job', '--period', 'P1D'), '--', 'true'])).code).toBe(0);
      const skip = ['--period', 'P1D', '--on-failure', 'skip'];
      expect((await runToEnd([...once('other', ...skip), '--', ...fail])).code).toBe(3);
      expect((await runToEnd([...once('other', ...skip), '--', 'true'])).code).toBe(80);
      await Promise.all([clear('job'), clear('other')]);
    });

    it('refuses bad usage with exit 64 before connecting', async () => {
      for (const args of [['--period', 'P1M'], ['--period', '0'], ['--period', 'P1D', '--on-failure', 'never'], []])
        expect((await runToEnd([...once('job', ...args), '--', 'true'])).code).toBe(64);
    });
  });
}

onceCommandSuite(() => etcdFixture('etcdStandalone'));
onceCommandSuite(() => zkFixture('zkStandalone'));

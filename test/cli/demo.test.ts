import { randomUUID } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { runDemo } from '../../src/demo.js';
import { etcdFixture } from '../harness/backends/etcd.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { memoryFixture } from '../harness/backends/memory.js';
import { mysqlFixture } from '../harness/backends/mysql.js';
import { postgresFixture } from '../harness/backends/postgres.js';
import { redisFixture } from '../harness/backends/redis.js';
import { zkFixture } from '../harness/backends/zookeeper.js';
import { runBaton } from '../harness/run-cli.js';

function demoSuite(getFixture: () => Fixture): void {
  describe(`the demo on ${getFixture().name}`, () => {
    it('settles each period once, cuts a holder off mid-job, refuses its late write, and keeps readers off the writer', async () => {
      const fixture = getFixture();
      const namespace = `demo-${randomUUID().slice(0, 8)}`;
      let output = '';
      const result = await runDemo({
        url: fixture.url(namespace),
        workers: 5,
        ticks: 4,
        cutAt: 2,
        // The longest the test servers allow (20 ticks of 200 ms): a loaded machine must not lose sessions.
        sessionTimeoutMs: 4_000,
        ttlSeconds: 4,
        write: (line) => (output += line),
      });
      expect(result.violations, output).toEqual([]);
      expect([...result.settled.keys()].sort()).toEqual([1, 2, 3, 4]);
      const tokens = [1, 2, 3, 4].map((period) => result.settled.get(period)!.token);
      for (let i = 1; i < tokens.length; i += 1)
        expect(tokens[i]! > tokens[i - 1]!, 'tokens grow period by period').toBe(true);
      // The cut-off worker: told by its signal, replaced by another worker, its late write refused.
      const cut = result.cut!;
      expect(cut.period).toBe(2);
      expect(cut.lost).toMatch(/^LockLostError: .*lock\.held is false$/);
      expect(cut.takenOverBy).toBeDefined();
      expect(cut.takenOverBy).not.toBe(cut.worker);
      expect(result.settled.get(2)!.worker).toBe(cut.takenOverBy);
      expect(result.refused).toHaveLength(1);
      expect(result.refused[0]).toMatchObject({ worker: cut.worker, period: 2 });
      expect(result.refused[0]!.token < result.settled.get(2)!.token).toBe(true);
      // The configuration: readers shared, the writer was alone, readers queued behind it saw its version.
      expect(result.config.readersOverlapped).toBe(true);
      expect(result.config.lateReadersSaw).toEqual([2, 2]);
      // The timeline and the summary a user reads.
      expect(output).toMatch(new RegExp(`CUT OFF ${cut.worker} while it computes period 2`));
      expect(output).toMatch(new RegExp(`${cut.worker} +late write for period 2 REFUSED by the ledger`));
      expect(output).toMatch(/worker +grants +settled +skipped +mean wait +max wait +refused +lost/);
      expect(output).toMatch(/ledger: 4 periods settled once each/);
      expect(output).toMatch(/no violation/);
      expect(await fixture.entries(namespace), 'entries left behind').toEqual([]);
      await fixture.cleanup(namespace);
    }, 60_000);
  });
}

// Each backend's demo waits on its ticks, not on the CPU, in its own namespace: side by side.
describe.concurrent('the demo on every backend', () => {
  demoSuite(memoryFixture);
  demoSuite(() => zkFixture('zkStandalone'));
  demoSuite(() => etcdFixture('etcdStandalone'));
  demoSuite(postgresFixture);
  demoSuite(mysqlFixture);
  demoSuite(redisFixture);
});

describe('npx baton demo', () => {
  it('runs on memory with no setup and exits 0; refuses fewer than 3 workers with exit 2', async () => {
    const { code, stdout } = await runBaton(['demo', '--ticks', '3', '--cut-at', '2']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/late write for period 2 REFUSED/);
    expect(stdout).toMatch(/no violation/);
    const refused = await runBaton(['demo', '--workers', '2']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--workers 2: expected at least 3/);
  });
});

import { readFile } from 'node:fs/promises';

import { describe, expect, it } from 'vitest';

import { main as config } from '../../examples/config.js';
import { main as leaderService } from '../../examples/leader-service.js';
import { main as scheduler } from '../../examples/scheduler.js';
import { main as transfers } from '../../examples/transfers.js';
import { etcdFixture } from '../harness/backends/etcd.js';
import type { Fixture } from '../harness/backends/fixture.js';
import { memoryFixture } from '../harness/backends/memory.js';
import { mysqlFixture } from '../harness/backends/mysql.js';
import { postgresFixture } from '../harness/backends/postgres.js';
import { redisFixture } from '../harness/backends/redis.js';
import { useScope } from '../harness/backends/scope.js';
import { zkFixture } from '../harness/backends/zookeeper.js';

const quiet = (): void => undefined;

function examples(getFixture: () => Fixture): void {
  describe(`the README's recipes on ${getFixture().name}`, () => {
    const scope = useScope(getFixture);

    it('scheduler: every period settled exactly once', async () => {
      const lines: string[] = [];
      const ledger = await scheduler(scope.fixture.url(scope.namespace), (line: string) => lines.push(line));
      expect([...ledger.settledBy.keys()]).toEqual([1, 2, 3]);
      expect(lines.filter((line) => line.includes('settled (token'))).toHaveLength(3);
      expect(lines.filter((line) => line.includes('already settled'))).toHaveLength(6);
    });

    it('leader-only service: one leader at a time, taking turns, followed by an observer', async () => {
      const lines: string[] = [];
      const shifts = await leaderService(scope.fixture.url(scope.namespace), (line: string) => lines.push(line));
      expect(shifts.length).toBeGreaterThanOrEqual(6);
      // Fair turns: nobody leads twice in a row while the others are queued.
      for (let i = 1; i < shifts.length; i += 1) expect(shifts[i]).not.toBe(shifts[i - 1]);
      const followed = lines.filter((line) => line.startsWith('leader: node-')).map((line) => line.split(' ')[1]);
      expect(followed.length).toBeGreaterThan(0);
      expect(followed.every((id, i) => i === 0 || id !== followed[i - 1])).toBe(true);
    });

    it('transfers and settlement: money is conserved, every transfer done, at most two bank calls at once', async () => {
      const lines: string[] = [];
      const { ledger, bank } = await transfers(scope.fixture.url(scope.namespace), (line: string) => lines.push(line));
      expect([...ledger.balances.values()].reduce((sum, balance) => sum + balance, 0)).toBe(300);
      expect(lines.filter((line) => line.endsWith(': done'))).toHaveLength(18);
      expect(bank.calls).toBe(12);
      expect(bank.peak).toBeLessThanOrEqual(2);
    });

    it('configuration: every read is whole while a writer updates', async () => {
      const seen = await config(scope.fixture.url(scope.namespace), quiet);
      expect(seen.length).toBeGreaterThan(3);
      for (const read of seen) expect(read.fee, `half-written configuration v${read.version}`).toBe(read.version);
      expect(Math.max(...seen.map((read) => read.version))).toBeLessThanOrEqual(4);
    });
  });
}

examples(memoryFixture);
examples(() => zkFixture('zkStandalone'));
examples(() => etcdFixture('etcdStandalone'));
examples(postgresFixture);
examples(mysqlFixture);
examples(redisFixture);

describe('the recipes page (docs/recipes.md, linked from the README)', () => {
  it('shows the recipes exactly as they are in examples/', async () => {
    const readme = await readFile(new URL('../../docs/recipes.md', import.meta.url), 'utf8');
    for (const file of ['scheduler.ts', 'leader-service.ts', 'config.ts', 'transfers.ts']) {
      const source = await readFile(new URL(`../../examples/${file}`, import.meta.url), 'utf8');
      expect(readme, `examples/${file} in docs/recipes.md`).toContain(
        `<!-- examples/${file} -->\n\`\`\`ts\n${source}\`\`\``,
      );
    }
  });
});

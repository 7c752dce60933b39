import { randomUUID } from 'node:crypto';

import { describe, expect, it } from 'vitest';

import { runDemo } from '../../../src/demo.js';
import type { Fixture } from '../../harness/backends/fixture.js';
import { memoryFixture } from '../../harness/backends/memory.js';
import { redisFixture } from '../../harness/backends/redis.js';

/** The demo's cut-off holder writes late; what refuses it must be the ledger's fence, not the worker. */
describe.each([
  { name: 'memory (in process, session expired)', fixture: memoryFixture },
  { name: 'Redis (worker processes, SIGSTOP)', fixture: redisFixture },
])('the demo on $name', ({ fixture }: { fixture: () => Fixture }) => {
  it("refuses the cut-off holder's late write with the fence's StaleTokenError, naming the successor's token as the mark", async () => {
    const namespace = `fence-demo-${randomUUID().slice(0, 8)}`;
    let output = '';
    const result = await runDemo({
      url: fixture().url(namespace),
      workers: 3,
      ticks: 3,
      cutAt: 2,
      sessionTimeoutMs: 4_000,
      ttlSeconds: 4,
      write: (line) => (output += line),
    });
    expect(result.violations, output).toEqual([]);
    const successor = result.settled.get(2)!;
    expect(result.refused).toEqual([
      { worker: result.cut!.worker, period: 2, token: result.refused[0]!.token, newest: successor.token },
    ]);
    expect(output).toMatch(
      new RegExp(
        `late write for period 2 REFUSED by the ledger  token ${result.refused[0]!.token} \\(stale\\): StaleTokenError: stale fencing token ${result.refused[0]!.token} for "payments/ledger": the resource has accepted token ${successor.token}`,
      ),
    );
    expect(await fixture().entries(namespace)).toEqual([]);
    await fixture().cleanup(namespace);
  }, 60_000);
});

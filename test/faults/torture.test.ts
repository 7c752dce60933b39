import { describe, expect, it } from 'vitest';

import { useContenderPool } from '../harness/faults/layouts.js';
import { describeSummary, faultKindsOf, torture, type TortureBackend } from '../harness/faults/torture-run.js';

const WORKERS = 8;
/**
 * Faults for at least 5 session timeouts (2 s sessions, the suite's session length; every fault's
 * length derives from it), then on until every kind was injected, up to a minute. BATON_TORTURE_LONG=1
 * runs the longer case (30 s on 4 s sessions); `npm run torture` runs for minutes.
 */
const LONG = process.env['BATON_TORTURE_LONG'] === '1';
const EVERY_KIND_WITHIN_MS = 60_000;
/**
 * A PostgreSQL restart ends every session whose lease it outlasts: on 2 s leases too few acquisitions
 * are left for the progress check, so PostgreSQL keeps 4 s.
 */
const timeoutOf = (backend: TortureBackend): number => (LONG || backend === 'postgres' ? 4_000 : 2_000);
const durationOf = (backend: TortureBackend): number => (LONG ? 30_000 : 5 * timeoutOf(backend));

/** `BATON_TORTURE_SEED` replays a schedule that a failed run printed; otherwise every run draws its own. */
function seed(): number {
  const given = process.env['BATON_TORTURE_SEED'];
  return given === undefined ? Math.floor(Math.random() * 2 ** 31) : Number(given);
}

const pool = useContenderPool(WORKERS);

/**
 * A short run of `npm run torture` (see test/harness/faults/torture-run.ts): seconds of random member
 * kills, members cut off from the leader, partitions, short disconnects and server-side expiries on a
 * 3-node layout (on Redis: kills of its one primary, with appendfsync always), while 8 processes
 * contend on one lock. The run checks every hold the processes report.
 */
describe.each<TortureBackend>(['zk', 'etcd', 'postgres'])('torture: %s', (backend) => {
  it(
    `${durationOf(backend) / 1_000} s or more of random faults, every kind: no overlap, tokens increase, no stale write accepted, no stalled waiter, no orphan`,
    async () => {
      const summary = await torture({
        backend,
        durationMs: durationOf(backend),
        everyKindWithinMs: EVERY_KIND_WITHIN_MS,
        workers: WORKERS,
        timeoutMs: timeoutOf(backend),
        seed: seed(),
        pool: pool(),
      });
      console.info(describeSummary(summary));
      const replay = `replay with BATON_TORTURE_SEED=${summary.seed}`;
      expect(summary.violations, replay).toEqual([]);
      expect(summary.stalls, `waiters that nothing woke (${replay})`).toBe(0);
      expect(summary.orphans, `left on the server after the faults healed (${replay})`).toEqual([]);
      const { server, client } = faultKindsOf(backend);
      for (const kind of [...server, ...client])
        expect(summary.faults[kind], `${kind} faults injected`).toBeGreaterThan(0);
      // The stall check above finds a waiter nothing woke; this one, a workload that barely moved. Its bar
      // is low because 10 s of member kills on a loaded 2-core machine leave few grants (30 on etcd, once).
      expect(
        summary.acquisitions,
        `the workload progressed under the faults:\n${describeSummary(summary)}`,
      ).toBeGreaterThan(WORKERS * 2);
      expect(summary.ok).toBe(true);
    },
    Math.max(durationOf(backend), EVERY_KIND_WITHIN_MS) + timeoutOf(backend) * 60,
  );
});

import { describe, expect, it } from 'vitest';

import { useScope } from '../harness/backends/scope.js';
import { layouts } from '../harness/faults/layouts.js';
import { partitionTrials } from '../harness/faults/partition-trials.js';

const TRIALS = 20;
/**
 * Trials at once, all of them: each has its own lock, proxy and sessions, so they do not disturb each
 * other, and each spends its time waiting for a session to expire.
 */
const PARALLEL = TRIALS;

/** A holder partitioned from its server (proxy blackhole) is told it lost the lock before anyone else gets it. */
describe.each(layouts)('partitioned holder on $name', (layout) => {
  const scope = useScope(() => layout.fixture());

  it(`is told before the next holder is granted, and its late write is refused (${TRIALS} trials)`, async () => {
    const gaps = await partitionTrials(layout, scope, TRIALS, PARALLEL);
    expect(gaps).toHaveLength(TRIALS);
    // The figures for the record: how long before the next grant the cut-off holder was told.
    const sorted = [...gaps].sort((a, b) => a - b);
    console.info(
      `${layout.name}: partitioned holder told before the next grant in ${gaps.length}/${TRIALS} trials; ` +
        `smallest gap ${sorted[0]!.toFixed(1)} ms, median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(1)} ms; ` +
        `${TRIALS} late writes refused`,
    );
  }, 120_000);
});

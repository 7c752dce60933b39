import { fc, test } from '@fast-check/vitest';
import { afterAll } from 'vitest';

import type { Fixture } from '../harness/backends/fixture.js';
import { type CommandShape, drain, lockCommands, tally } from './commands.js';
import { LockModel } from './lock-model.js';
import { RealLocks } from './real-locks.js';

/**
 * The model-based test of the locks on one backend: random sequences of acquire, timed acquire,
 * tryAcquire, release, abort, downgrade, session expiry and close across a few sessions and two lock
 * names, each run against the reference model (`lock-model.ts`). Checked at every step: no two
 * holders of a lock unless both read, grants in FIFO order (exactly the model's), fencing tokens in
 * queue order, each server queue equal to the model's; at the end of a run: nothing left on the
 * server, every ended session's holders and waiters told.
 *
 * A failure prints fast-check's seed, path and the command list with its replay path. To replay it:
 *
 *   BATON_MODEL_SEED=<seed> BATON_MODEL_PATH=<path> BATON_MODEL_REPLAY=<replayPath> npx vitest run test/model/<backend>.test.ts
 *
 * `npm test` makes `runs` runs; BATON_MODEL_FULL=1 makes `fullRuns` (docs/testing.md). BATON_MODEL_RUNS
 * and BATON_MODEL_COMMANDS set the number of runs and the steps per run for a long manual search (e.g.
 * BATON_MODEL_RUNS=20000 on memory); BATON_MODEL_STATS=1 prints how many steps of each kind ran.
 */
export interface ModelTestSize extends CommandShape {
  /** Runs in `npm test`. */
  readonly runs: number;
  /** Runs with BATON_MODEL_FULL=1: the longer search made by hand. */
  readonly fullRuns: number;
  readonly maxCommands: number;
  /** For vitest: the whole property, every run. */
  readonly timeoutMs: number;
}

export function lockModelTest(getFixture: () => Fixture, size: ModelTestSize): void {
  const env = process.env;
  const runs = Number(env['BATON_MODEL_RUNS'] ?? (env['BATON_MODEL_FULL'] === '1' ? size.fullRuns : size.runs));
  const maxCommands = Number(env['BATON_MODEL_COMMANDS'] ?? size.maxCommands);
  const seed = env['BATON_MODEL_SEED'] === undefined ? undefined : Number(env['BATON_MODEL_SEED']);
  const path = env['BATON_MODEL_PATH'];
  const replayPath = env['BATON_MODEL_REPLAY'];
  const commands = fc.commands(lockCommands(size), {
    maxCommands,
    size: 'max',
    ...(replayPath === undefined ? {} : { replayPath }),
  });
  const scale = runs / size.runs;
  test.prop([commands], {
    numRuns: runs,
    ...(seed === undefined ? {} : { seed }),
    ...(path === undefined ? {} : { path, endOnFailure: true }),
  })(
    `locks on ${getFixture().name} behave as the model: ${runs} runs of up to ${maxCommands} steps`,
    async (steps) => {
      const model = new LockModel(size.locks, size.slots);
      const real = await RealLocks.open(getFixture(), size.slots);
      try {
        await fc.asyncModelRun(() => ({ model, real }), steps);
        await drain(model, real);
        await real.finish();
      } finally {
        await real.dispose();
      }
    },
    size.timeoutMs * Math.max(1, scale),
  );
  if (env['BATON_MODEL_STATS'] !== undefined)
    afterAll(() => console.log(`steps run: ${JSON.stringify(Object.fromEntries(tally))}`));
}

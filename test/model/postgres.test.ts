import { postgresFixture } from '../harness/backends/postgres.js';
import { lockModelTest } from './property.js';

lockModelTest(postgresFixture, {
  runs: 30,
  fullRuns: 100,
  maxCommands: 16,
  slots: 3,
  locks: ['a', 'b'],
  timeoutsMs: [0, 20],
  endEvery: 40,
  timeoutMs: 120_000,
});

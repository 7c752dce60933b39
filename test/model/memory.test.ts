import { memoryFixture } from '../harness/backends/memory.js';
import { lockModelTest } from './property.js';

lockModelTest(memoryFixture, {
  runs: 1_000,
  fullRuns: 3_000,
  maxCommands: 24,
  slots: 4,
  locks: ['a', 'b'],
  timeoutsMs: [0, 2, 10],
  endEvery: 14,
  timeoutMs: 120_000,
});

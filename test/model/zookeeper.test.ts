import { zkFixture } from '../harness/backends/zookeeper.js';
import { lockModelTest } from './property.js';

lockModelTest(() => zkFixture('zkStandalone'), {
  runs: 100,
  fullRuns: 300,
  maxCommands: 16,
  slots: 3,
  locks: ['a', 'b'],
  timeoutsMs: [0, 20],
  endEvery: 14,
  timeoutMs: 120_000,
});

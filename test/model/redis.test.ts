import { redisFixture } from '../harness/backends/redis.js';
import { lockModelTest } from './property.js';

lockModelTest(redisFixture, {
  runs: 60,
  fullRuns: 200,
  maxCommands: 16,
  slots: 3,
  locks: ['a', 'b'],
  timeoutsMs: [0, 20],
  endEvery: 40,
  timeoutMs: 120_000,
});

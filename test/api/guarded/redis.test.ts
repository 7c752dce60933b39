import { redisClusterFixture, redisFixture } from '../../harness/backends/redis.js';
import { guardedContract } from './guarded.contract.js';

guardedContract(() => redisFixture());
guardedContract(() => redisClusterFixture());

import { redisClusterFixture, redisFixture } from '../support/backends/redis.js';
import { guardedContract } from './guarded.contract.js';

guardedContract(() => redisFixture());
guardedContract(() => redisClusterFixture());

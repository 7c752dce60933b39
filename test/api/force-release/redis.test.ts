import { redisFixture } from '../../harness/backends/redis.js';
import { forceReleaseContract } from './force-release.contract.js';

forceReleaseContract(() => redisFixture());

import { redisFixture } from '../harness/backends/redis.js';
import { electionContract } from './election.contract.js';
import { eventsContract } from './events.contract.js';
import { multiLockContract } from './multilock.contract.js';
import { mutexContract } from './mutex.contract.js';
import { reentrantContract } from './reentrant.contract.js';
import { rwContract } from './rw.contract.js';
import { semaphoreContract } from './semaphore.contract.js';

mutexContract(() => redisFixture());
rwContract(() => redisFixture());
reentrantContract(() => redisFixture());
electionContract(() => redisFixture());
eventsContract(() => redisFixture());
semaphoreContract(() => redisFixture());
multiLockContract(() => redisFixture());

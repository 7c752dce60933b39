import { memoryFixture } from '../harness/backends/memory.js';
import { electionContract } from './election.contract.js';
import { eventsContract } from './events.contract.js';
import { multiLockContract } from './multilock.contract.js';
import { mutexContract } from './mutex.contract.js';
import { reentrantContract } from './reentrant.contract.js';
import { rwContract } from './rw.contract.js';
import { semaphoreContract } from './semaphore.contract.js';

mutexContract(memoryFixture);
rwContract(memoryFixture);
reentrantContract(memoryFixture);
electionContract(memoryFixture);
eventsContract(memoryFixture);
semaphoreContract(memoryFixture);
multiLockContract(memoryFixture);

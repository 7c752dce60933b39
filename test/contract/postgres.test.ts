import { postgresFixture } from '../harness/backends/postgres.js';
import { electionContract } from './election.contract.js';
import { eventsContract } from './events.contract.js';
import { multiLockContract } from './multilock.contract.js';
import { mutexContract } from './mutex.contract.js';
import { reentrantContract } from './reentrant.contract.js';
import { rwContract } from './rw.contract.js';
import { semaphoreContract } from './semaphore.contract.js';

mutexContract(postgresFixture);
rwContract(postgresFixture);
reentrantContract(postgresFixture);
electionContract(postgresFixture);
eventsContract(postgresFixture);
semaphoreContract(postgresFixture);
multiLockContract(postgresFixture);

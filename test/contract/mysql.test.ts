import { mysqlFixture } from '../harness/backends/mysql.js';
import { electionContract } from './election.contract.js';
import { eventsContract } from './events.contract.js';
import { multiLockContract } from './multilock.contract.js';
import { mutexContract } from './mutex.contract.js';
import { reentrantContract } from './reentrant.contract.js';
import { rwContract } from './rw.contract.js';
import { semaphoreContract } from './semaphore.contract.js';

mutexContract(mysqlFixture);
rwContract(mysqlFixture);
reentrantContract(mysqlFixture);
electionContract(mysqlFixture);
eventsContract(mysqlFixture);
semaphoreContract(mysqlFixture);
multiLockContract(mysqlFixture);

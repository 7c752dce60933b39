import { zkFixture } from '../harness/backends/zookeeper.js';
import { electionContract } from './election.contract.js';
import { eventsContract } from './events.contract.js';
import { multiLockContract } from './multilock.contract.js';
import { mutexContract } from './mutex.contract.js';
import { reentrantContract } from './reentrant.contract.js';
import { rwContract } from './rw.contract.js';
import { semaphoreContract } from './semaphore.contract.js';

mutexContract(() => zkFixture('zkEnsemble'));
rwContract(() => zkFixture('zkEnsemble'));
reentrantContract(() => zkFixture('zkEnsemble'));
electionContract(() => zkFixture('zkEnsemble'));
eventsContract(() => zkFixture('zkEnsemble'));
semaphoreContract(() => zkFixture('zkEnsemble'));
multiLockContract(() => zkFixture('zkEnsemble'));

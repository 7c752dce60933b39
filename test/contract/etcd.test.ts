import { etcdFixture } from '../harness/backends/etcd.js';
import { electionContract } from './election.contract.js';
import { eventsContract } from './events.contract.js';
import { multiLockContract } from './multilock.contract.js';
import { mutexContract } from './mutex.contract.js';
import { reentrantContract } from './reentrant.contract.js';
import { rwContract } from './rw.contract.js';
import { semaphoreContract } from './semaphore.contract.js';

mutexContract(() => etcdFixture('etcdStandalone'));
rwContract(() => etcdFixture('etcdStandalone'));
reentrantContract(() => etcdFixture('etcdStandalone'));
electionContract(() => etcdFixture('etcdStandalone'));
eventsContract(() => etcdFixture('etcdStandalone'));
semaphoreContract(() => etcdFixture('etcdStandalone'));
multiLockContract(() => etcdFixture('etcdStandalone'));

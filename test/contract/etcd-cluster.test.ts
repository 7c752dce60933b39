import { etcdFixture } from '../harness/backends/etcd.js';
import { electionContract } from './election.contract.js';
import { eventsContract } from './events.contract.js';
import { multiLockContract } from './multilock.contract.js';
import { mutexContract } from './mutex.contract.js';
import { reentrantContract } from './reentrant.contract.js';
import { rwContract } from './rw.contract.js';
import { semaphoreContract } from './semaphore.contract.js';

mutexContract(() => etcdFixture('etcdCluster'));
rwContract(() => etcdFixture('etcdCluster'));
reentrantContract(() => etcdFixture('etcdCluster'));
electionContract(() => etcdFixture('etcdCluster'));
eventsContract(() => etcdFixture('etcdCluster'));
semaphoreContract(() => etcdFixture('etcdCluster'));
multiLockContract(() => etcdFixture('etcdCluster'));

import { etcdFixture } from '../support/etcd.js';
import { mutexContract } from './mutex.contract.js';

mutexContract(() => etcdFixture('etcdStandalone'));

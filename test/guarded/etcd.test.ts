import { etcdFixture } from '../support/backends/etcd.js';
import { guardedContract } from './guarded.contract.js';

guardedContract(() => etcdFixture('etcdStandalone'));

import { etcdFixture } from '../../harness/backends/etcd.js';
import { guardedContract } from './guarded.contract.js';

guardedContract(() => etcdFixture('etcdStandalone'));

import { etcdFixture } from '../../harness/backends/etcd.js';
import { forceReleaseContract } from './force-release.contract.js';

forceReleaseContract(() => etcdFixture('etcdStandalone'));

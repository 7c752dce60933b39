import { zkFixture } from '../../harness/backends/zookeeper.js';
import { guardedContract } from './guarded.contract.js';

guardedContract(() => zkFixture('zkStandalone'));

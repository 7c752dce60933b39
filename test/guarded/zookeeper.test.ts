import { zkFixture } from '../support/backends/zookeeper.js';
import { guardedContract } from './guarded.contract.js';

guardedContract(() => zkFixture('zkStandalone'));

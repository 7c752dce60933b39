import { zkFixture } from '../support/zookeeper.js';
import { mutexContract } from './mutex.contract.js';

mutexContract(() => zkFixture('zkEnsemble'));

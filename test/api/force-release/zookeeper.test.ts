import { zkFixture } from '../../harness/backends/zookeeper.js';
import { forceReleaseContract } from './force-release.contract.js';

forceReleaseContract(() => zkFixture('zkStandalone'));

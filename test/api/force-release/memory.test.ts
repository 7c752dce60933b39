import { memoryFixture } from '../../harness/backends/memory.js';
import { forceReleaseContract } from './force-release.contract.js';

forceReleaseContract(() => memoryFixture());

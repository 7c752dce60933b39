import { memoryFixture } from '../../harness/backends/memory.js';
import { guardedContract } from './guarded.contract.js';

guardedContract(() => memoryFixture());

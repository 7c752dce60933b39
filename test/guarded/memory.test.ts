import { memoryFixture } from '../support/backends/memory.js';
import { guardedContract } from './guarded.contract.js';

guardedContract(() => memoryFixture());

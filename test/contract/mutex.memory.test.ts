import { memoryFixture } from '../support/memory.js';
import { mutexContract } from './mutex.contract.js';

mutexContract(memoryFixture);

import { postgresFixture } from '../../harness/backends/postgres.js';
import { guardedContract } from './guarded.contract.js';

guardedContract(() => postgresFixture());

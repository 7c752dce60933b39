import { postgresFixture } from '../support/backends/postgres.js';
import { guardedContract } from './guarded.contract.js';

guardedContract(() => postgresFixture());

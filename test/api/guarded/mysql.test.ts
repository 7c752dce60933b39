import { mysqlFixture } from '../../harness/backends/mysql.js';
import { guardedContract } from './guarded.contract.js';

guardedContract(() => mysqlFixture());

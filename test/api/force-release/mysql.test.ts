import { mysqlFixture } from '../../harness/backends/mysql.js';
import { forceReleaseContract } from './force-release.contract.js';

forceReleaseContract(() => mysqlFixture());

import { postgresFixture } from '../../harness/backends/postgres.js';
import { forceReleaseContract } from './force-release.contract.js';

forceReleaseContract(() => postgresFixture());

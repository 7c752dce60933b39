import { connect } from '../../src/connect.js';
import { FairMutex } from '../../recipes/mutex.js';

/** Takes a lock a few times and closes the session; the process must then end on its own. */
const url = process.argv[2] ?? '';
const session = await connect(url, { ttlSeconds: 2, sessionTimeoutMs: 2_000 });
const mutex = new FairMutex(session, 'exit');
for (let i = 0; i < 20; i += 1) await (await mutex.acquire()).release();
await session.close();
process.stdout.write('closed\n');

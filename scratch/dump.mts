import { startZooKeeper, fourLetterWord } from '../test/harness/zookeeper.js';
import { connect } from '../src/connect.js';
import { FairMutex } from '../recipes/mutex.js';
const zk = await startZooKeeper({ size: 1 });
try {
  const s = await connect(`zk://${zk.connectString}/h`, { sessionTimeoutMs: 2000 });
  const l = await new FairMutex(s, 'x').acquire();
  console.log('id', s.id);
  console.log(await fourLetterWord(zk.members[0]!.clientPort, 'dump'));
  await l.release(); await s.close();
} finally { await zk.stop(); }

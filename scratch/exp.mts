import { startZooKeeper, fourLetterWord } from '../test/harness/zookeeper.js';
import { connect } from '../src/connect.js';
import { FairMutex } from '../recipes/mutex.js';
import { expireZkSession } from '../test/support/zookeeper.js';
const zk = await startZooKeeper({ size: 1 });
const info = { connectString: zk.connectString, ports: [zk.members[0]!.clientPort], sessionTimeoutMs: 2000 };
try {
  for (let trial = 0; trial < 15; trial++) {
    const [a, b] = [await connect(`zk://${zk.connectString}/h`, { sessionTimeoutMs: 2000 }), await connect(`zk://${zk.connectString}/h`, { sessionTimeoutMs: 2000 })];
    const t0 = Date.now();
    const client = (a.backend as any);
    const log: string[] = [];
    a.on('state', (s, p) => log.push(`${Date.now() - t0}ms ${p}->${s}`));
    const held = await new FairMutex(a, 'x').acquire();
    const own = new FairMutex(a, 'x').acquire().catch((e) => e);
    const other = new FairMutex(b, 'x').acquire();
    await new Promise(r => setTimeout(r, 50));
    await expireZkSession(info, a);
    log.push(`${Date.now() - t0}ms expired by helper`);
    const deadline = Date.now() + 6000;
    while (!held.signal.aborted && Date.now() < deadline) await new Promise(r => setTimeout(r, 10));
    log.push(`${Date.now() - t0}ms aborted=${held.signal.aborted}`);
    console.log(trial, log.join(' | '));
    if (!held.signal.aborted) { console.log(await fourLetterWord(zk.members[0]!.clientPort, 'dump')); console.log(await fourLetterWord(zk.members[0]!.clientPort, 'cons')); break; }
    await (await other).release(); await b.close(); await a.close();
  }
} finally { await zk.stop(); process.exit(0); }

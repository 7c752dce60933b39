import { FairMutex } from '../../../recipes/mutex.js';
import { connect } from '../../../src/connect.js';

/**
 * Takes `count` locks on one session (`batch` acquires at a time), says `held <session id>` on stdout,
 * then closes the session when stdin says `close`, or waits to be killed. argv = url count batch timeout-ms.
 */
const [url = '', count = '0', batch = '1000', timeoutMs = '10000'] = process.argv.slice(2);
const session = await connect(url, { sessionTimeoutMs: Number(timeoutMs) });
for (let from = 0; from < Number(count); from += Number(batch)) {
  const names = Array.from({ length: Math.min(Number(batch), Number(count) - from) }, (_, i) => `lock-${from + i}`);
  await Promise.all(names.map((name) => new FairMutex(session, name).acquire()));
}
process.stdout.write(`held ${session.id}\n`);
process.stdin.on('data', (chunk: Buffer) => {
  if (chunk.toString().trim() !== 'close') return;
  void session.close().then(() => {
    process.stdout.write('closed\n');
    process.exit(0);
  });
});

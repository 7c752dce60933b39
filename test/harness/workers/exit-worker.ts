import { FairMutex } from '../../../recipes/mutex.js';
import { connect } from '../../../src/connect.js';
import { TcpProxy } from '../servers/proxy.js';

/**
 * Takes a lock a few times and closes the session; the process must then end on its own.
 *
 * With `waiting`: a second session waits for the lock until its signal times out (the process must not
 * end while it waits).
 *
 * With `lost`: a lock is held when the test makes the server silent; the session is lost and never
 * closed, and the process must end on its own all the same.
 *
 * With `pending-watch` (etcd): a waiter's watch is being created when its connection is cut and
 * refused, so the creation never completes; the session is closed in that state. A watcher left in
 * etcd3's watch manager would make it reconnect for ever and keep the process alive.
 */
const url = process.argv[2] ?? '';
const scenario = process.argv[3] ?? 'cycles';
// exit.test.ts bounds how long the process may live on after close() by this timeout.
const options = { ttlSeconds: 2, sessionTimeoutMs: 2_000 };

if (scenario === 'failed-connect' || scenario === 'unknown-name') {
  // `url` names a server that refuses or cannot be reached, or a name that does not exist: the connect
  // fails, and nothing may linger. A name's connect ends with the resolver's answer; its timeout is set
  // beyond the resolver's own (a lookup in flight at the timeout would outlive it: see docs/connecting.md).
  const connectTimeoutMs = scenario === 'unknown-name' ? 60_000 : 1_000;
  const failure = await connect(url, { ...options, connectTimeoutMs }).then(
    async (session) => {
      await session.close();
      throw new Error('connected to a server that should not be there');
    },
    (error: unknown) => error,
  );
  process.stderr.write(`connect failed as expected: ${String(failure)}\n`);
} else if (scenario === 'waiting') {
  // A waiter with nothing else pending in the process: it must keep the process alive until it is
  // given up (by AbortSignal.timeout, whose timer does not hold a process up on its own).
  const [holder, waiter] = [await connect(url, options), await connect(url, options)];
  const held = await new FairMutex(holder, 'exit').acquire();
  const outcome = await new FairMutex(waiter, 'exit')
    .acquire({ signal: AbortSignal.timeout(300) })
    .catch((error: unknown) => error);
  if (!(outcome instanceof DOMException && outcome.name === 'TimeoutError'))
    throw new Error(`the waiter ended with ${String(outcome)}`);
  await held.release();
  await Promise.all([holder.close(), waiter.close()]);
} else if (scenario === 'lost') {
  // The test makes the server silent once it reads `held`; the session is then lost, never closed.
  const session = await connect(url, options);
  await new FairMutex(session, 'exit').acquire();
  const lost = new Promise<void>((resolve) => session.on('state', (state) => state === 'lost' && resolve()));
  process.stdout.write('held\n');
  await lost;
} else if (scenario === 'cycles') {
  const session = await connect(url, options);
  const mutex = new FairMutex(session, 'exit');
  for (let i = 0; i < 20; i += 1) await (await mutex.acquire()).release();
  await session.close();
} else {
  const target = new URL(url.replace(/^etcd:/, 'http:'));
  const proxy = await TcpProxy.start({ port: Number(target.port) });
  const holder = await connect(url, options);
  const waiter = await connect(`etcd://${proxy.address}${target.pathname}`, options);
  const held = await new FairMutex(holder, 'exit').acquire();
  // The only request that names the holder's full key is the waiter's watch on it.
  const cut = proxy.dropAfterNextRequest((chunk) => chunk.includes(`${holder.id}-0-`)).then(() => proxy.refuse());
  const waiting = new FairMutex(waiter, 'exit').acquire().catch((error: unknown) => error);
  await cut;
  await waiter.close();
  if (!(((await waiting) as Error) instanceof Error))
    throw new Error('the waiter was granted through a refused connection');
  await held.release();
  await holder.close();
  await proxy.close();
}
process.stdout.write('closed\n');

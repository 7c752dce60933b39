import net from 'node:net';

const handedOut = new Set<number>();

/** A free 127.0.0.1 port, never the same one twice in this process. */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.unref();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
      });
    });
    if (port !== 0 && !handedOut.has(port)) {
      handedOut.add(port);
      return port;
    }
  }
  throw new Error('no free port found on 127.0.0.1');
}

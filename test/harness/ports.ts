import { readFileSync } from 'node:fs';
import net from 'node:net';

const handedOut = new Set<number>();

/** Server ports are chosen from here up to the start of the kernel's ephemeral range. */
const LOWEST = 10_000;

/** The first port the kernel may give an outgoing connection (Linux's default range starts at 32768). */
function ephemeralStart(): number {
  try {
    const start = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(start) && start > LOWEST + 1_000 ? start : 32_768;
  } catch {
    return 32_768;
  }
}

function bindable(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A free 127.0.0.1 port, never the same one twice in this process, and outside the kernel's ephemeral
 * range: while a killed server is down, clients keep dialling its port, and an outgoing connection may
 * be given that very port as its own (on loopback even connecting to itself), so that the restarted
 * server could not bind it again ("address already in use").
 */
export async function freePort(): Promise<number> {
  const span = ephemeralStart() - LOWEST;
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = LOWEST + Math.floor(Math.random() * span);
    if (handedOut.has(port) || !(await bindable(port))) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error('no free port found on 127.0.0.1');
}

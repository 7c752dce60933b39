import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** What the register answered to one write. */
export interface WriteOutcome {
  readonly accepted: boolean;
  /** The highest token the register had seen before this write. */
  readonly highest: string;
}

/**
 * The protected resource of the fault tests: a register that accepts a write only when its fencing
 * token is at least the highest it has seen, as a storage service guarded by baton's tokens would.
 * It listens on 127.0.0.1 so that contenders in other processes write to the same register.
 * A refused write is fencing doing its job: a holder that was cut off writes late with a token lower
 * than its successor's. What the tests assert is that such late writes are refused, which holds only
 * if baton's tokens really grow from holder to holder.
 */
export class FencedRegister {
  readonly #server: Server;
  #highest = -1n;
  accepted = 0;
  refused = 0;

  private constructor(server: Server) {
    this.#server = server;
  }

  static async start(): Promise<FencedRegister> {
    const server = createServer();
    const register = new FencedRegister(server);
    server.on('request', (request, response) => {
      const token = new URL(request.url ?? '/', 'http://register').searchParams.get('token');
      if (request.method !== 'POST' || token === null || !/^\d+$/.test(token)) {
        response.writeHead(400).end('POST /write?token=<decimal>');
        return;
      }
      const outcome = register.write(BigInt(token));
      response
        .writeHead(outcome.accepted ? 200 : 409, { 'content-type': 'application/json' })
        .end(JSON.stringify(outcome));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return register;
  }

  /** `http://127.0.0.1:<port>`: hand it to contenders in other processes (see `writeFenced`). */
  get url(): string {
    return `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
  }

  get highest(): bigint {
    return this.#highest;
  }

  /** The register's rule, for writers in this process. */
  write(token: bigint): WriteOutcome {
    const highest = this.#highest.toString();
    if (token < this.#highest) {
      this.refused += 1;
      return { accepted: false, highest };
    }
    this.#highest = token;
    this.accepted += 1;
    return { accepted: true, highest };
  }

  close(): Promise<void> {
    this.#server.closeAllConnections();
    return new Promise((resolve) => this.#server.close(() => resolve()));
  }
}

/** A write to a register in another process, from a contender that holds `token`. */
export async function writeFenced(registerUrl: string, token: bigint): Promise<WriteOutcome> {
  const response = await fetch(`${registerUrl}/write?token=${token}`, { method: 'POST' });
  if (response.status !== 200 && response.status !== 409)
    throw new Error(`register answered ${response.status}: ${await response.text()}`);
  return (await response.json()) as WriteOutcome;
}

/** A holder's write, and whether its signal was still not aborted once the register had answered. */
export interface HolderWrite extends WriteOutcome {
  readonly whileHeld: boolean;
}

/**
 * A write by a holder of `token`. `whileHeld` is true only if the holder believed it held for the whole
 * write: such a write must never be refused, since no successor may have written before it.
 */
export async function writeAsHolder(registerUrl: string, token: bigint, signal: AbortSignal): Promise<HolderWrite> {
  const outcome = await writeFenced(registerUrl, token);
  return { ...outcome, whileHeld: !signal.aborted };
}

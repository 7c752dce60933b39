import net from 'node:net';

/** Sends a ZooKeeper four-letter word and returns the whole reply (the server closes after it). */
export function fourLetterWord(port: number, command: string, host = '127.0.0.1', timeoutMs = 2_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect({ port, host });
    socket.setTimeout(timeoutMs, () => socket.destroy(new Error(`${command} to ${host}:${port} timed out`)));
    socket.on('connect', () => socket.write(command));
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', (hadError) => {
      if (!hadError) resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

/** `leader`, `follower`, `standalone`, or undefined when the server does not answer (yet). */
export async function zkMode(port: number): Promise<string | undefined> {
  try {
    return /^Mode: (\w+)/m.exec(await fourLetterWord(port, 'srvr'))?.[1];
  } catch {
    return undefined;
  }
}

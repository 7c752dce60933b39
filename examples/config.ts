// Shared configuration: many readers at once, one writer at a time, and no reader ever sees a
// configuration half written. Readers queued behind a writer wait for it, so writers never starve.
import { pathToFileURL } from 'node:url';

import { connect, ReadWriteLock, type Session } from 'baton-locks';

export interface Config {
  version: number;
  fee: number;
}

/** Where the configuration lives: a file, a table, a blob store. Writing it takes two steps here. */
export class ConfigStore {
  readonly #config: Config = { version: 1, fee: 1 };
  async read(): Promise<Config> {
    return { ...this.#config };
  }
  async write(next: Config): Promise<void> {
    this.#config.version = next.version;
    await new Promise((resolve) => setTimeout(resolve, 5)); // half written for a moment
    this.#config.fee = next.fee;
  }
}

export function readConfig(session: Session, store: ConfigStore): Promise<Config> {
  return new ReadWriteLock(session, 'config/pricing').readLock.withLock(() => store.read(), { timeoutMs: 10_000 });
}

export function updateConfig(session: Session, store: ConfigStore, change: (current: Config) => Config): Promise<void> {
  return new ReadWriteLock(session, 'config/pricing').writeLock.withLock(
    async () => store.write(change(await store.read())),
    { timeoutMs: 10_000 },
  );
}

/** Three readers reading while a writer updates three times; every read is whole (fee = version here). */
export async function main(url: string, log = console.log): Promise<Config[]> {
  const store = new ConfigStore();
  const [writer, ...readers] = await Promise.all([0, 1, 2, 3].map(() => connect(url)));
  const seen: Config[] = [];
  let writing = true;
  try {
    const reading = readers.map(async (session) => {
      for (let i = 0; i < 500 && writing; i += 1) {
        seen.push(await readConfig(session, store));
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    });
    for (let i = 0; i < 3; i += 1)
      await updateConfig(writer!, store, (c) => ({ version: c.version + 1, fee: c.fee + 1 }));
    writing = false;
    await Promise.all(reading);
    log(`${seen.length} reads, versions seen: ${[...new Set(seen.map((c) => c.version))].join(', ')}`);
    return seen;
  } finally {
    await Promise.all([writer!, ...readers].map((session) => session.close()));
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main(process.argv[2] ?? 'memory://example');

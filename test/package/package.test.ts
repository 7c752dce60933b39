import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import {
  type EntryPoint,
  hoverProblems,
  reachedDeclarations,
  surfaceProblems,
  TEST_HOOKS,
} from '../harness/checkers/package-surface.js';
import { makeTempDir, removeTempDir } from '../harness/servers/process.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
  exports: Record<string, { types: string; default: string }>;
};

/** A user's TypeScript file: the public API, its types and errors, the fence, metrics and testing subpaths. */
const CONSUMER = `
import { connect, FairMutex, ReadWriteLock, LeaderElection, Reentrant, Semaphore, MultiLock, LockTimeoutError, PermitsMismatchError, StaleTokenError, type AclPolicy, type LockHandle, type PermitHandle, type Session } from '${manifest.name}';
import { fencedWrite, MemoryCasStore, MYSQL_STALE_TOKEN_SQLSTATE, MysqlFence, PostgresFence, RedisFence, STALE_TOKEN_SQLSTATE, StaleTokenError as FenceError, type CompareAndSetStore } from '${manifest.name}/fence';
import { Redis } from 'ioredis';
import mysql2 from 'mysql2/promise';
import { BatonMetrics } from '${manifest.name}/metrics';
import { expireMemorySession } from '${manifest.name}/testing';
const acl: AclPolicy = 'open';
const session = await connect('memory://consumer', { sessionTimeoutMs: 5_000 });
const lock: LockHandle = await new FairMutex(session, 'a', { interop: 'curator' }).acquire({ timeoutMs: 10 });
const token: bigint = lock.fencingToken;
const typed: Session = session;
// @ts-expect-error the recipes' plumbing is no part of a session's type
typed.backend;
// @ts-expect-error nor is the server entry behind a handle
lock.entry;
await new ReadWriteLock(session, 'b').readLock.withLock(async () => token);
await new Reentrant(new FairMutex(session, 'c')).withLock(async () => undefined);
const leader: string | null = await new LeaderElection(session, 'd', { id: 'x' }).leader();
const permit: PermitHandle = await new Semaphore(session, 'permits', { permits: 2 }).acquire({ count: 2, timeoutMs: 10 });
const held: number = permit.count;
await permit.release();
await using both = await new MultiLock(session, ['account-1', 'account-2']).acquire({ timeoutMs: 10 });
const tokens: ReadonlyMap<string, bigint> = both.fencingTokens;
console.log(held, tokens.size, both.signal.aborted, PermitsMismatchError.name);
try { await lock.release(); } catch (error) { if (error instanceof LockTimeoutError) console.log(error.code); }
const maybe = await new FairMutex(session, 'e').tryAcquire();
if (maybe !== null && maybe.held) maybe.signal.throwIfAborted();
await maybe?.release();
const leadership = await new LeaderElection(session, 'f', { id: 'y' }).campaign({ timeoutMs: 1_000 });
await leadership.resign();
const rw = new ReadWriteLock(session, 'g');
await (await rw.downgrade(await rw.writeLock.acquire())).release();
const level = await new Reentrant(new FairMutex(session, 'h')).acquire({ owner: 'job' });
console.log(level.held, level.name, level.fencingToken, session.id, session.state, session.timeoutMs);
await level.release();
session.on('state', () => undefined).on('lock', (event) => console.log(event.type));
console.log(acl, leader, typeof BatonMetrics);
const cas: CompareAndSetStore<string> = new MemoryCasStore<string>();
const written: string = await fencedWrite(cas, 'ledger/2026-12', token, (before) => before ?? 'settled');
try { await fencedWrite(cas, 'ledger/2026-12', token - 1n, () => 'late'); } catch (error) { if (error instanceof StaleTokenError) console.log(error.resource, error.token, error.mark); }
const redisFence = new RedisFence(new Redis({ lazyConnect: true }));
console.log(written, FenceError === StaleTokenError, new PostgresFence({ schema: 'fence' }).schemaSql(), STALE_TOKEN_SQLSTATE, RedisFence.markKey('ledger'), typeof redisFence.set);
const mysqlFence = new MysqlFence({ database: 'app' });
const pool = mysql2.createPool({ uri: 'mysql://app@127.0.0.1:1/app' }); // never connects: only its type is used
const settle = (): Promise<number> => mysqlFence.poolTransaction(pool, 'ledger', token, async (c) => (await c.query('SELECT 1'), 1));
console.log(typeof settle, mysqlFence.schemaSql().startsWith('DELIMITER'), MYSQL_STALE_TOKEN_SQLSTATE);
await pool.end();
expireMemorySession(session);
await session.close();
`;

const made: string[] = [];
afterAll(() => {
  for (const dir of made) removeTempDir(dir);
});

const COMPILER_OPTIONS = {
  strict: true,
  skipLibCheck: false,
  noEmit: true,
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  target: 'ES2022',
  lib: ['ES2023', 'ESNext.Disposable'],
  types: ['node'],
};

/** A user's project with the packed tarball installed (its dependencies from this checkout). */
function installPacked(): { dir: string; packageDir: string } {
  const dir = makeTempDir('baton-consumer-');
  made.push(dir);
  // What `npm install` of the packed tarball puts in place; its dependencies from this checkout.
  const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
  })
    .trim()
    .split('\n')
    .pop()!;
  const modules = join(dir, 'node_modules');
  mkdirSync(modules);
  execFileSync('tar', ['-xzf', join(dir, tarball), '-C', dir]);
  renameSync(join(dir, 'package'), join(modules, manifest.name));
  for (const dependency of [
    ...Object.keys(manifest.dependencies),
    ...Object.keys(manifest.peerDependencies ?? {}),
    '@types/node',
  ]) {
    mkdirSync(dirname(join(modules, dependency)), { recursive: true });
    symlinkSync(join(ROOT, 'node_modules', dependency), join(modules, dependency));
  }
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
  return { dir, packageDir: join(modules, manifest.name) };
}

/** Every `.d.ts` under `dir`. */
function declarationFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.d.ts'))
    .map((name) => join(dir, name));
}

describe('the package as a user installs it', () => {
  let installed: { dir: string; packageDir: string };
  /** The package's entry points: production ones, and the test powers of a `testing` subpath if any. */
  let production: EntryPoint[];
  let testing: EntryPoint[];
  const options = ts.convertCompilerOptionsFromJson(COMPILER_OPTIONS, ROOT).options;
  beforeAll(() => {
    installed = installPacked();
    const entries = Object.entries(manifest.exports).map(([subpath, target]) => ({
      subpath,
      types: join(installed.packageDir, target.types),
    }));
    production = entries.filter((entry) => !/testing/.test(entry.subpath));
    testing = entries.filter((entry) => /testing/.test(entry.subpath));
  }, 180_000);

  it('ships a LICENSE, no source maps, and the pages its README links to (every relative link of a shipped page resolves)', () => {
    const root = installed.packageDir;
    const files = readdirSync(root, { recursive: true, encoding: 'utf8' });
    expect(files).toContain('LICENSE');
    expect(files.filter((file) => file.endsWith('.map'))).toEqual([]);
    const pages = files.filter((file) => file.endsWith('.md'));
    expect(pages).toContain('README.md');
    const dangling: string[] = [];
    for (const page of pages) {
      for (const [, target = ''] of readFileSync(join(root, page), 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
        const path = target.split('#')[0]!;
        if (/^[a-z]+:/.test(target) || path === '') continue;
        if (!existsSync(join(root, dirname(page), path))) dangling.push(`${page} -> ${target}`);
      }
    }
    expect(dangling).toEqual([]);
  });

  it('compiles in a strict TypeScript project that checks libraries too (skipLibCheck false)', () => {
    const { dir } = installed;
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: COMPILER_OPTIONS, files: ['index.ts'] }),
    );
    writeFileSync(join(dir, 'index.ts'), CONSUMER);
    let output = '';
    try {
      execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error);
    }
    expect(output).toBe('');
  }, 60_000);

  it("shows documentation on hover over every name a user's file takes from the package, and no internal class", () => {
    const file = join(installed.dir, 'hover.ts');
    writeFileSync(file, CONSUMER);
    expect(
      hoverProblems(file, installed.packageDir, options, ['QueueLock', 'BatonSession', 'SessionCore', 'Entry']),
    ).toEqual([]);
  }, 60_000);

  it('documents every export and each of its members, and shows no internal member nor an unexported class', () => {
    expect(surfaceProblems(installed.packageDir, [...production, ...testing], options)).toEqual([]);
  }, 60_000);

  it('ships no @internal declaration, and no test hook in a .d.ts that a production entry point reaches', () => {
    // Files reached only through a `testing` subpath may hold test powers: that is where they belong.
    const reached = new Set(reachedDeclarations(installed.packageDir, production, options));
    const testingOnly = new Set(
      reachedDeclarations(installed.packageDir, testing, options).filter((file) => !reached.has(file)),
    );
    const found: string[] = [];
    for (const file of declarationFiles(installed.packageDir)) {
      const text = readFileSync(file, 'utf8');
      const where = file.slice(installed.packageDir.length + 1);
      if (text.includes('@internal')) found.push(`${where}: @internal (stripInternal is off?)`);
      if (testingOnly.has(file)) continue;
      for (const hook of TEST_HOOKS) if (new RegExp(`\\b${hook}\\b`).test(text)) found.push(`${where}: ${hook}`);
    }
    expect(found).toEqual([]);
  }, 60_000);
});

import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  name: string;
  dependencies: Record<string, string>;
  peerDependencies?: Record<string, string>;
};

/** A user's TypeScript file: the public API, its types and errors, the metrics and testing subpaths. */
const CONSUMER = `
import { connect, FairMutex, ReadWriteLock, LeaderElection, Reentrant, LockTimeoutError, type AclPolicy, type LockHandle } from '${manifest.name}';
import { BatonMetrics } from '${manifest.name}/metrics';
import { expireMemorySession } from '${manifest.name}/testing';
const acl: AclPolicy = 'open';
const session = await connect('memory://consumer', { sessionTimeoutMs: 5_000 });
const lock: LockHandle = await new FairMutex(session, 'a', { interop: 'curator' }).acquire({ timeoutMs: 10 });
const token: bigint = lock.fencingToken;
await new ReadWriteLock(session, 'b').readLock.withLock(async () => token);
await new Reentrant(new FairMutex(session, 'c')).withLock(async () => undefined);
const leader: string | null = await new LeaderElection(session, 'd', { id: 'x' }).leader();
try { await lock.release(); } catch (error) { if (error instanceof LockTimeoutError) console.log(error.code); }
console.log(acl, leader, typeof BatonMetrics);
expireMemorySession(session);
await session.close();
`;

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

describe('the package as a user installs it', () => {
  it('compiles in a strict TypeScript project that checks libraries too (skipLibCheck false)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'baton-consumer-'));
    made.push(dir);
    // What `npm install` of the packed tarball puts in place; its dependencies from this checkout.
    const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split('\n').pop()!;
    const modules = join(dir, 'node_modules');
    mkdirSync(modules);
    execFileSync('tar', ['-xzf', join(dir, tarball), '-C', dir]);
    renameSync(join(dir, 'package'), join(modules, manifest.name));
    for (const dependency of [...Object.keys(manifest.dependencies), ...Object.keys(manifest.peerDependencies ?? {}), '@types/node']) {
      mkdirSync(dirname(join(modules, dependency)), { recursive: true });
      symlinkSync(join(ROOT, 'node_modules', dependency), join(modules, dependency));
    }
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', type: 'module', private: true }));
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { strict: true, skipLibCheck: false, noEmit: true, module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', lib: ['ES2023', 'ESNext.Disposable'], types: ['node'] },
        files: ['index.ts'],
      }),
    );
    writeFileSync(join(dir, 'index.ts'), CONSUMER);
    let output = '';
    try {
      execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (error) {
      output = String((error as { stdout?: string }).stdout ?? error);
    }
    expect(output).toBe('');
  }, 180_000);
});

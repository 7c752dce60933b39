import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
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

/** A user's TypeScript file: the public API, its types and errors, the metrics subpath. */
const CONSUMER = `
import { connect, FairMutex, ReadWriteLock, LeaderElection, Reentrant, LockTimeoutError, type AclPolicy, type LockHandle } from '${manifest.name}';
import { BatonMetrics } from '${manifest.name}/metrics';
const acl: AclPolicy = 'open';
const session = await connect('memory://consumer', { sessionTimeoutMs: 5_000 });
const lock: LockHandle = await new FairMutex(session, 'a', { interop: 'curator' }).acquire({ timeoutMs: 10 });
const token: bigint = lock.fencingToken;
await new ReadWriteLock(session, 'b').readLock.withLock(async () => token);
await new Reentrant(new FairMutex(session, 'c')).withLock(async () => undefined);
const leader: string | null = await new LeaderElection(session, 'd', { id: 'x' }).leader();
try { await lock.release(); } catch (error) { if (error instanceof LockTimeoutError) console.log(error.code); }
console.log(acl, leader, typeof BatonMetrics);
await session.close();
`;

const made: string[] = [];
afterAll(() => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

let installed: { dir: string; modules: string } | undefined;
/** What `npm install` of the packed tarball puts in place (packed once: packing builds the package). */
function installPackage(): { dir: string; modules: string } {
  if (installed !== undefined) return installed;
  const dir = mkdtempSync(join(tmpdir(), 'baton-consumer-'));
  made.push(dir);
  const tarball = execFileSync('npm', ['pack', '--silent', '--pack-destination', dir], { cwd: ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split('\n').pop()!;
  const modules = join(dir, 'node_modules');
  mkdirSync(modules);
  execFileSync('tar', ['-xzf', join(dir, tarball), '-C', dir]);
  renameSync(join(dir, 'package'), join(modules, manifest.name));
  installed = { dir, modules };
  return installed;
}

/** Every file under `dir`, relative to it. */
function filesUnder(dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? filesUnder(dir, join(prefix, entry.name)) : [join(prefix, entry.name)],
  );
}

describe('the package as a user installs it', () => {
  it('ships a LICENSE, no source maps, and the pages its README links to (every relative link of a shipped page resolves)', () => {
    const root = join(installPackage().modules, manifest.name);
    const files = filesUnder(root);
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
  }, 180_000);

  it('compiles in a strict TypeScript project that checks libraries too (skipLibCheck false)', () => {
    // Its dependencies from this checkout.
    const { dir, modules } = installPackage();
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

import { cpSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { build } from 'esbuild';

import { makeTempDir } from './servers/process.js';

/** The environment variable that hands the compiled tree's folder to the test processes and their children. */
export const COMPILED_ENV = 'BATON_TEST_COMPILED';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** What child processes run: the sources and the harness (not the tests), as in the repository. */
const COMPILED_FOLDERS = ['src', 'recipes', 'test/harness'];

/**
 * Compiles the sources and the harness once per run into a temp dir of the same layout, so that each
 * child process (a contender, a `baton` command) starts as plain JavaScript instead of compiling its
 * modules again under tsx, which takes seconds a process on a loaded machine. esbuild strips the
 * types file by file, as tsx does (no type check: `npm run typecheck` does that); the folder gets the
 * repository's node_modules by a link, and a package.json whose exports name the compiled sources,
 * so that `baton-locks/testing` is the sources' module, as tsconfig's paths make it under tsx.
 * Returns the folder (removed on exit like the servers' temp dirs).
 */
export async function compileForChildren(): Promise<string> {
  const dir = makeTempDir('baton-compiled-');
  const files = COMPILED_FOLDERS.flatMap((folder) => sourceFiles(path.join(ROOT, folder)));
  await build({
    entryPoints: files.filter((file) => file.endsWith('.ts')),
    outdir: dir,
    outbase: ROOT,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    logLevel: 'warning',
  });
  for (const file of files.filter((name) => name.endsWith('.mjs')))
    cpSync(file, path.join(dir, path.relative(ROOT, file)));
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  writeFileSync(path.join(dir, 'package.json'), JSON.stringify(compiledManifest()));
  return dir;
}

/**
 * How to start `tsFile` (a path in the repository) in a child process: its compiled copy when the
 * run compiled one (`compileForChildren`), else the TypeScript file under tsx (a run by hand, such
 * as `npm run torture`).
 */
export function childScript(tsFile: string): { script: string; execArgv: string[] } {
  const compiled = process.env[COMPILED_ENV];
  if (compiled === undefined || compiled === '') return { script: tsFile, execArgv: ['--import', 'tsx'] };
  return { script: path.join(compiled, path.relative(ROOT, tsFile)).replace(/\.ts$/, '.js'), execArgv: [] };
}

/** Every TypeScript and plain module below `folder`, tests left out. */
function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { recursive: true, encoding: 'utf8' })
    .filter((name) => /\.(ts|mjs)$/.test(name) && !/\.(test|d)\.ts$/.test(name))
    .map((name) => path.join(folder, name));
}

/** The repository's package.json with its exports moved from `dist/` to the compiled sources. */
function compiledManifest(): object {
  const manifest = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    name: string;
    version: string;
    exports: Record<string, { default: string }>;
  };
  const exports = Object.fromEntries(
    Object.entries(manifest.exports).map(([subpath, target]) => [subpath, target.default.replace('./dist/', './')]),
  );
  return { name: manifest.name, version: manifest.version, type: 'module', exports };
}

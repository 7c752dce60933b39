import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const BACKEND_FOLDERS = ['zookeeper', 'etcd', 'postgres', 'mysql', 'redis', 'memory', 'sql'];
/** The files that list every backend, one line (or block) each: adding a backend touches these. */
const REGISTRIES = ['src/backends/registry.ts', 'src/backends/public.ts', 'src/backends/test-kits.ts'];
/**
 * Outside these the code knows no backend by name. `src/fence/` is no backend: its fences are named
 * by the store a resource keeps its marks in, which is what a user picks there.
 */
const OWN_NAMES = [...BACKEND_FOLDERS.map((name) => `src/backends/${name}/`), 'src/fence/'];
/** A backend's name as a word of an identifier (`zkProbeOf`, `EtcdClientOptions`, `REDIS_URL`). */
const BACKEND_WORD = /^(zk|zoo[kK]eeper|etcd|postgres(ql)?|pg|mysql|mariadb|redis|memory)$/i;

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The words of an identifier: `etcdProbeOf` -> etcd, Probe, Of; `REDIS_URL` -> REDIS, URL. */
function wordsOf(identifier: string): string[] {
  return identifier.split(/_|(?<=[a-z0-9])(?=[A-Z])/).filter((word) => word !== '');
}

/** The names a file takes from `src/fence/` (`MemoryCasStore`): a fence's store, not a backend. */
function namesImportedFromFence(source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  for (const statement of source.statements) {
    if (!ts.isImportDeclaration(statement) || !(statement.moduleSpecifier as ts.StringLiteral).text.includes('fence/'))
      continue;
    const bindings = statement.importClause?.namedBindings;
    if (bindings !== undefined && ts.isNamedImports(bindings))
      for (const element of bindings.elements) names.add(element.name.text);
  }
  return names;
}

/** Where a file names a backend in code: an identifier with a backend's word, or an import of a backend's folder. */
function backendNamesIn(path: string): string[] {
  const text = readFileSync(join(ROOT, path), 'utf8');
  const found: string[] = [];
  const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true);
  const fenceNames = namesImportedFromFence(source);
  const visit = (node: ts.Node): void => {
    if (
      ts.isIdentifier(node) &&
      !fenceNames.has(node.text) &&
      wordsOf(node.text).some((word) => BACKEND_WORD.test(word))
    ) {
      found.push(`${path}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${node.text}`);
    }
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined) {
      const specifier = (node.moduleSpecifier as ts.StringLiteral).text;
      const folder = BACKEND_FOLDERS.find((name) => specifier.includes(`/${name}/`));
      if (folder !== undefined) found.push(`${path}: imports ${specifier}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('one backend, one folder', () => {
  const files = [...sourceFiles('src'), ...sourceFiles('recipes')].filter(
    (path) => !REGISTRIES.includes(path) && !OWN_NAMES.some((prefix) => path.startsWith(prefix)),
  );

  it('no code outside a backend folder and the registries names a backend or imports from its folder', () => {
    expect(files.length).toBeGreaterThan(40);
    expect(files.flatMap(backendNamesIn)).toEqual([]);
  });

  it("no backend imports from another backend's folder: what two share lives in sql/ or beside core.ts", () => {
    const crossings = BACKEND_FOLDERS.filter((name) => name !== 'sql').flatMap((name) =>
      sourceFiles(`src/backends/${name}`).flatMap((path) => {
        const text = readFileSync(join(ROOT, path), 'utf8');
        return [...text.matchAll(/from '((?:\.\.\/)+)([a-z]+)\//g)]
          .filter(([, , folder]) => folder !== name && folder !== 'sql' && BACKEND_FOLDERS.includes(folder!))
          .map(([specifier]) => `${path}: ${specifier}`);
      }),
    );
    expect(crossings).toEqual([]);
  });

  it.each([
    ['src/backends/registry.ts', 'index.ts', 'index.js'],
    ['src/backends/public.ts', 'public.ts', 'public.js'],
    ['src/backends/test-kits.ts', 'testing.ts', 'testing.js'],
  ])('%s names every backend folder that has a %s', (registry, file, imported) => {
    const text = readFileSync(join(ROOT, registry), 'utf8');
    const folders = BACKEND_FOLDERS.filter((name) => readdirSync(join(ROOT, 'src/backends', name)).includes(file));
    expect(folders.length).toBeGreaterThan(3);
    for (const name of folders) expect(text).toContain(`from './${name}/${imported}'`);
  });
});

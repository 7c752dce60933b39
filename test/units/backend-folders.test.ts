import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

import ts from 'typescript';
import { describe, expect, it } from 'vitest';

import { BACKENDS } from '../../src/backends/registry.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** Every folder of src/backends/: one per backend, and `sql/`, what the SQL backends share. */
const FOLDERS = readdirSync(join(ROOT, 'src/backends'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory())
  .map((entry) => entry.name);
const SHARED = 'sql';
/** The files that list every backend, a line or two each: adding a backend touches these. */
const REGISTRIES = ['src/backends/registry.ts', 'src/backends/public.ts', 'src/backends/test-kits.ts'];
/**
 * Outside these the code knows no backend by name. `src/fence/` is no backend: its fences are named
 * by the store a resource keeps its marks in, which is what a user picks there.
 */
const OWN_NAMES = [...FOLDERS.map((name) => `src/backends/${name}/`), 'src/fence/'];
/**
 * A backend's name as a word of an identifier (`zkProbeOf`, `EtcdClientOptions`, `REDIS_URL`): every
 * descriptor's scheme, aliases, title and folder, and the short names its code goes by (`pg`).
 */
const BACKEND_WORDS = new Set(
  [
    ...BACKENDS.flatMap((backend) => [backend.scheme, backend.title, ...backend.schemes, ...(backend.aliases ?? [])]),
    ...FOLDERS.filter((name) => name !== SHARED),
    'pg',
  ].map((word) => word.toLowerCase()),
);

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

/** The module specifiers of a file: imports, re-exports and `import()` calls. */
function specifiersOf(source: ts.SourceFile): string[] {
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier !== undefined)
      found.push((node.moduleSpecifier as ts.StringLiteral).text);
    if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [argument] = node.arguments;
      if (argument !== undefined && ts.isStringLiteralLike(argument)) found.push(argument.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The backend folder a relative specifier of `path` lands in, if any. */
function folderReached(path: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const target = relative(join(ROOT, 'src/backends'), normalize(join(ROOT, dirname(path), specifier)));
  const [first, ...rest] = target.split('/');
  return rest.length > 0 && first !== undefined && FOLDERS.includes(first) ? first : undefined;
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

function parse(path: string): ts.SourceFile {
  return ts.createSourceFile(path, readFileSync(join(ROOT, path), 'utf8'), ts.ScriptTarget.Latest, true);
}

/** Where a file names a backend in code: an identifier with a backend's word, or an import of a backend's folder. */
function backendNamesIn(path: string): string[] {
  const source = parse(path);
  const found: string[] = [];
  const fenceNames = namesImportedFromFence(source);
  const visit = (node: ts.Node): void => {
    if (
      ts.isIdentifier(node) &&
      !fenceNames.has(node.text) &&
      wordsOf(node.text).some((word) => BACKEND_WORDS.has(word.toLowerCase()))
    ) {
      found.push(`${path}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1} ${node.text}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  for (const specifier of specifiersOf(source))
    if (folderReached(path, specifier) !== undefined) found.push(`${path}: imports ${specifier}`);
  return found;
}

describe('one backend, one folder', () => {
  const files = [...sourceFiles('src'), ...sourceFiles('recipes')].filter(
    (path) => !REGISTRIES.includes(path) && !OWN_NAMES.some((prefix) => path.startsWith(prefix)),
  );

  it('no code outside a backend folder and the registries names a backend or imports from its folder', () => {
    expect(files.length).toBeGreaterThan(40);
    expect(BACKEND_WORDS).toContain('mariadb');
    expect(files.flatMap(backendNamesIn)).toEqual([]);
  });

  it("no backend imports from another backend's folder: what two share lives in sql/ or beside core.ts", () => {
    const crossings = FOLDERS.filter((name) => name !== SHARED).flatMap((name) =>
      sourceFiles(`src/backends/${name}`).flatMap((path) =>
        specifiersOf(parse(path))
          .filter((specifier) => ![undefined, name, SHARED].includes(folderReached(path, specifier)))
          .map((specifier) => `${path}: ${specifier}`),
      ),
    );
    expect(crossings).toEqual([]);
  });

  it('every backend folder but sql/ is a descriptor in the registry', () => {
    const registry = readFileSync(join(ROOT, 'src/backends/registry.ts'), 'utf8');
    const backends = FOLDERS.filter((name) => name !== SHARED);
    expect(backends.length).toBe(BACKENDS.length);
    for (const name of backends) expect(registry).toContain(`from './${name}/index.js'`);
  });

  it("public.ts exports every backend's public types and joins its connect() keys into BackendConnectOptions", () => {
    const text = readFileSync(join(ROOT, 'src/backends/public.ts'), 'utf8');
    const union = text.slice(text.indexOf('export type BackendConnectOptions'));
    const withPublic = FOLDERS.filter((name) => readdirSync(join(ROOT, 'src/backends', name)).includes('public.ts'));
    expect(withPublic.length).toBeGreaterThan(3);
    for (const name of withPublic) {
      const exported = readFileSync(join(ROOT, 'src/backends', name, 'public.ts'), 'utf8');
      const keys = /export interface (\w+ConnectOptions)\b/.exec(exported)?.[1];
      expect(keys, `${name}/public.ts declares its connect() keys`).toBeDefined();
      expect(text).toMatch(new RegExp(`export type \\{[^}]*\\b${keys!}\\b[^}]*\\} from './${name}/public\\.js'`));
      expect(union).toContain(keys!);
    }
  });

  it("test-kits.ts re-exports every backend's testing.ts", () => {
    const text = readFileSync(join(ROOT, 'src/backends/test-kits.ts'), 'utf8');
    const withKit = FOLDERS.filter((name) => readdirSync(join(ROOT, 'src/backends', name)).includes('testing.ts'));
    expect(withKit.length).toBeGreaterThan(3);
    for (const name of withKit) expect(text).toContain(`export * from './${name}/testing.js';`);
  });
});

import ts from 'typescript';

/**
 * Names that are the package's inner workings: none may be a member of anything the package's entry
 * points export (a session's recipe plumbing, a handle's entry, a lock's owner bookkeeping), nor be
 * declared in a shipped `.d.ts` that a production entry point reaches (the backends' test hooks).
 */
export const INTERNAL_MEMBERS = [
  'backend',
  'enter',
  'hold',
  'waiting',
  'checkDeadline',
  'report',
  'reporting',
  'replacedBy',
  'describe',
  'waitingCount',
  'deadline',
  'entry',
  'session',
  'acquireAs',
  'releaseHold',
  'ownerContext',
];
export const TEST_HOOKS = [
  'zkCounters',
  'etcdCounters',
  'createOrphan',
  'muteWatchEvents',
  'etcdWatches',
  'zkLimits',
  'mkdirpHooks',
  'muteNotifications',
  'redisWatches',
  'stopWatchdog',
];

/** One entry point of the package: its subpath (`.`, `./metrics`) and its `.d.ts`. */
export interface EntryPoint {
  readonly subpath: string;
  readonly types: string;
}

/**
 * What a user's editor shows of the package, read from its `.d.ts` with the compiler: every problem
 * found, one line each (empty when the surface is clean).
 * - every exported symbol, and each of its members declared by the package, carries a doc comment
 *   (each overload and constructor too);
 * - no member is named like an internal (`INTERNAL_MEMBERS`) or tagged `@internal`;
 * - no exported declaration names a class, interface or type of the package that no entry point
 *   exports (a hover would show `QueueLock`, `BatonSession`): bases, parameter and property types.
 */
export function surfaceProblems(
  packageDir: string,
  entries: readonly EntryPoint[],
  options: ts.CompilerOptions,
): string[] {
  const program = ts.createProgram(
    entries.map((entry) => entry.types),
    options,
  );
  const checker = program.getTypeChecker();
  const inPackage = (node: ts.Node): boolean => node.getSourceFile().fileName.startsWith(packageDir);
  const problems: string[] = [];
  const publicSymbols = new Map<ts.Symbol, string>();
  for (const entry of entries) {
    const file = program.getSourceFile(entry.types);
    const module = file === undefined ? undefined : checker.getSymbolAtLocation(file);
    if (module === undefined) {
      problems.push(`${entry.subpath}: ${entry.types} not found`);
      continue;
    }
    for (const exported of checker.getExportsOfModule(module))
      publicSymbols.set(resolved(checker, exported), `${entry.subpath} ${exported.name}`);
  }
  const documented = (node: ts.Node): boolean =>
    ts.getJSDocCommentsAndTags(node).some((doc) => ts.isJSDoc(doc) && ts.getTextOfJSDocComment(doc.comment)?.trim());
  const internalTag = (node: ts.Node): boolean => ts.getJSDocTags(node).some((tag) => tag.tagName.text === 'internal');
  const namesHidden = (where: string, node: ts.Node): void => {
    const visit = (child: ts.Node): void => {
      const name = ts.isTypeReferenceNode(child)
        ? child.typeName
        : ts.isExpressionWithTypeArguments(child)
          ? child.expression
          : undefined;
      if (name !== undefined) {
        const symbol = checker.getSymbolAtLocation(name);
        const target = symbol === undefined ? undefined : resolved(checker, symbol);
        const declaration = target?.declarations?.[0];
        if (
          target !== undefined &&
          declaration !== undefined &&
          inPackage(declaration) &&
          !(target.flags & ts.SymbolFlags.TypeParameter) &&
          !publicSymbols.has(target)
        ) {
          problems.push(`${where} names ${target.name}, which no entry point exports`);
        }
      }
      ts.forEachChild(child, visit);
    };
    // Only the signature: a class body's members are checked one by one.
    if (ts.isClassDeclaration(node) || ts.isInterfaceDeclaration(node))
      for (const clause of node.heritageClauses ?? []) visit(clause);
    else visit(node);
  };
  for (const [symbol, where] of publicSymbols) {
    for (const declaration of symbol.declarations ?? []) {
      if (!inPackage(declaration)) continue;
      // A variable's doc sits on its statement; `getJSDocCommentsAndTags` finds it from the declaration.
      if (!documented(declaration)) problems.push(`${where}: no doc comment`);
      namesHidden(where, declaration);
    }
    const members: ts.Symbol[] = [];
    if (symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface)) {
      members.push(...checker.getPropertiesOfType(checker.getDeclaredTypeOfSymbol(symbol)));
    }
    if (symbol.flags & ts.SymbolFlags.Class) {
      members.push(
        ...(symbol.members?.get(ts.InternalSymbolName.Constructor) === undefined
          ? []
          : [symbol.members.get(ts.InternalSymbolName.Constructor)!]),
      );
      for (const statics of symbol.exports?.values() ?? []) if (statics.name !== 'prototype') members.push(statics);
    }
    for (const member of members) {
      const name = member.name === ts.InternalSymbolName.Constructor ? 'constructor' : member.name;
      if (name.startsWith('__#') || name === '#private') continue;
      for (const declaration of member.declarations ?? []) {
        if (!inPackage(declaration)) continue; // Error's message, AbortSignal's members...
        if ((ts.getCombinedModifierFlags(declaration) & ts.ModifierFlags.Private) !== 0) continue;
        if (ts.isPropertyDeclaration(declaration) && ts.isPrivateIdentifier(declaration.name)) continue;
        const at = `${where}.${name}`;
        // A testing entry point is where the test hooks belong; elsewhere they are internals.
        const hook = TEST_HOOKS.includes(name) && !where.startsWith('./testing');
        if (INTERNAL_MEMBERS.includes(name) || hook) problems.push(`${at}: an internal member`);
        if (internalTag(declaration)) problems.push(`${at}: tagged @internal`);
        if (!documented(declaration)) problems.push(`${at}: no doc comment`);
        namesHidden(at, declaration);
      }
    }
  }
  return [...new Set(problems)];
}

/** The shipped `.d.ts` files a program made from `entries` reaches (under `packageDir`). */
export function reachedDeclarations(
  packageDir: string,
  entries: readonly EntryPoint[],
  options: ts.CompilerOptions,
): string[] {
  const program = ts.createProgram(
    entries.map((entry) => entry.types),
    options,
  );
  return program
    .getSourceFiles()
    .map((file) => file.fileName)
    .filter((name) => name.startsWith(packageDir));
}

function resolved(checker: ts.TypeChecker, symbol: ts.Symbol): ts.Symbol {
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

/**
 * What an editor's hover shows over every name the user's file `file` takes from the package (under
 * `packageDir`): one line per name whose hover has no documentation or names an internal class.
 */
export function hoverProblems(
  file: string,
  packageDir: string,
  options: ts.CompilerOptions,
  hidden: readonly string[],
): string[] {
  const host: ts.LanguageServiceHost = {
    getCompilationSettings: () => options,
    getScriptFileNames: () => [file],
    getScriptVersion: () => '1',
    getScriptSnapshot: (name) => {
      const content = ts.sys.readFile(name);
      return content === undefined ? undefined : ts.ScriptSnapshot.fromString(content);
    },
    getCurrentDirectory: () => ts.sys.getCurrentDirectory(),
    getDefaultLibFileName: (settings) => ts.getDefaultLibFilePath(settings),
    fileExists: (name) => ts.sys.fileExists(name),
    readFile: (name) => ts.sys.readFile(name),
    readDirectory: (...args) => ts.sys.readDirectory(...args),
    directoryExists: (name) => ts.sys.directoryExists(name),
    getDirectories: (name) => ts.sys.getDirectories(name),
  };
  const service = ts.createLanguageService(host);
  const program = service.getProgram()!;
  const source = program.getSourceFile(file)!;
  const checker = program.getTypeChecker();
  const problems: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isIdentifier(node)) {
      const symbol = checker.getSymbolAtLocation(node);
      const target =
        symbol !== undefined && symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      const fromPackage =
        target?.declarations?.some((declaration) => declaration.getSourceFile().fileName.startsWith(packageDir)) ??
        false;
      if (fromPackage) {
        const info = service.getQuickInfoAtPosition(file, node.getStart(source));
        const shown = ts.displayPartsToString(info?.displayParts);
        const docs = ts.displayPartsToString(info?.documentation).trim();
        const line = source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1;
        if (docs === '') problems.push(`line ${line} ${node.text}: hover without documentation (${shown})`);
        for (const name of hidden)
          if (new RegExp(`\\b${name}\\b`).test(shown))
            problems.push(`line ${line} ${node.text}: hover names ${name} (${shown})`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return [...new Set(problems)];
}

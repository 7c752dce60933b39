// Lint for the whole repository: typescript-eslint with type information, so that a promise nobody
// awaits (a release, a rejection nobody sees) fails the test command instead of a production run.
import js from '@eslint/js';
import simpleImportSort from 'eslint-plugin-simple-import-sort';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', '.bench-build/', 'node_modules/', 'coverage/', '**/*.mjs', '**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'simple-import-sort': simpleImportSort },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
      // An async function without await is kept on purpose: it turns a synchronous throw (bad input)
      // into a rejection, which is what a caller of a promise-returning API handles.
      '@typescript-eslint/require-await': 'off',
      // Object literals that implement a port (events, hooks) reach their owner by a named alias.
      '@typescript-eslint/no-this-alias': ['error', { allowedNames: ['driver', 'session', 'compiler', 'manager'] }],
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      // A variable assigned after a closure that reads it was made (a callback wired before its owner exists).
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      'simple-import-sort/imports': 'error',
      'simple-import-sort/exports': 'error',
    },
  },
  {
    files: ['eslint.config.js'],
    extends: [tseslint.configs.disableTypeChecked],
  },
);

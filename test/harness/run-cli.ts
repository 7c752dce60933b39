import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { childScript } from './compiled.js';

export interface CliResult {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

const CLI = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));

/**
 * Node's arguments that run `baton` from the sources: the run's compiled copy (`childScript`), or
 * `src/cli.ts` under tsx, as `npm run demo` runs it, when `fromSources` or outside a test run.
 */
export function batonCommand(fromSources = false): string[] {
  if (fromSources) return ['--import', 'tsx', CLI];
  const { script, execArgv } = childScript(CLI);
  return [...execArgv, script];
}

/** Runs `baton` as a user would, with `env` added; resolves with the exit code and output. */
export async function runBaton(
  args: readonly string[],
  env: Record<string, string> = {},
  fromSources = false,
): Promise<CliResult> {
  try {
    const { stdout, stderr } = await promisify(execFile)(process.execPath, [...batonCommand(fromSources), ...args], {
      timeout: 30_000,
      env: { ...process.env, ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as CliResult;
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

#!/usr/bin/env node
import { readFileSync } from 'node:fs';

import { Command, InvalidArgumentError as CommanderArgumentError } from 'commander';

import { InvalidArgumentError, InvalidNameError } from '../recipes/errors.js';
import type { Backend } from './backends/backend.js';
import { backendForScheme, BACKENDS } from './backends/registry.js';
import { CREDENTIALS_LINE, listed, URL_HELP, urlExamples } from './commands/backend-help.js';
import { registerElect } from './commands/elect.js';
import { registerLock } from './commands/lock.js';
import { registerOnce } from './commands/once.js';
import { registerRelease } from './commands/release.js';
import type { ConnectOptions } from './connect.js';
import { runDemo } from './demo.js';
import { fenceSchemaText } from './fence/schema-command.js';
import { runInspect } from './inspect.js';
import { resolveUrl } from './url.js';

function milliseconds(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > 600_000)
    throw new CommanderArgumentError('a whole number of milliseconds from 1 to 600000');
  return parsed;
}

function positiveInt(value: string): number {
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < 1 || parsed > 1000)
    throw new CommanderArgumentError('a whole number from 1 to 1000');
  return parsed;
}

/** The version in the package's package.json: two folders up from dist/src/cli.js, one from src/cli.ts. */
function packageVersion(): string {
  for (const up of ['../../package.json', '../package.json']) {
    try {
      const manifest = JSON.parse(readFileSync(new URL(up, import.meta.url), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (typeof manifest.version === 'string' && typeof manifest.name === 'string') return manifest.version;
    } catch {
      // not there: the other layout
    }
  }
  return 'unknown';
}

const program = new Command('baton')
  .description(
    `Coordination recipes on ${listed(
      BACKENDS.map((backend) => backend.title),
      'and',
    )}`,
  )
  .version(packageVersion(), '-V, --version', 'print the version');

program
  .command('demo')
  .description(
    'a settlement scheduler: workers take a fair mutex every tick, one is cut off mid-job, a fenced ledger refuses its late write; then readers and a writer share a configuration',
  )
  .option(
    '--backend <url>',
    `connection URL, e.g. ${urlExamples('demo')} (each worker then runs in its own process)`,
    'memory://demo',
  )
  .option('--workers <n>', 'number of workers, each with its own session (at least 3)', positiveInt, 5)
  .option('--ticks <n>', 'settlement periods', positiveInt, 6)
  .option(
    '--cut-at <n>',
    'the period whose settling worker is cut off (0: none)',
    (value) => (value === '0' ? 0 : positiveInt(value)),
    3,
  )
  .option('--session-timeout <ms>', 'ZooKeeper or Redis session timeout for the workers', milliseconds, 4_000)
  .option('--ttl <s>', 'etcd lease TTL for the workers, in seconds', positiveInt, 2)
  .action(
    async (options: {
      backend: string;
      workers: number;
      ticks: number;
      cutAt: number;
      sessionTimeout: number;
      ttl: number;
    }) => {
      if (options.workers < 3)
        throw new InvalidArgumentError('--workers', options.workers, 'at least 3 (a writer and two readers)');
      // Ctrl-C or a kill ends the demo through process.exit, so that its worker processes are ended too.
      process.once('SIGINT', () => process.exit(130)).once('SIGTERM', () => process.exit(143));
      const result = await runDemo({
        url: options.backend,
        workers: options.workers,
        ticks: options.ticks,
        cutAt: options.cutAt,
        sessionTimeoutMs: options.sessionTimeout,
        ttlSeconds: options.ttl,
        write: (line) => process.stdout.write(line),
      });
      if (result.violations.length > 0) process.exitCode = 1;
    },
  );

program
  .command('inspect')
  .description('show the holders and waiters of a lock, election or read/write lock, in queue order')
  .argument('<url>', URL_HELP)
  .argument('<name>', 'the lock name, e.g. payments/settlement')
  .option('--json', 'print JSON (one object per line with --watch)', false)
  .option('--watch', 'print again at every change of the queue, until interrupted', false)
  .addHelpText('after', `\n${CREDENTIALS_LINE}`)
  .option('--connect-timeout <ms>', 'give up connecting after this many milliseconds', milliseconds, 5_000)
  .action(async (url: string, name: string, options: { json: boolean; watch: boolean; connectTimeout: number }) => {
    warnPasswordInArguments(url);
    const stop = new AbortController();
    const interrupt = (): void => stop.abort(new Error('interrupted'));
    process.once('SIGINT', interrupt).once('SIGTERM', interrupt);
    try {
      await runInspect({
        url,
        name,
        json: options.json,
        watch: options.watch,
        connectTimeoutMs: options.connectTimeout,
        connect: credentialsFromEnvironment(process.env, url),
        signal: stop.signal,
        write: (text) => process.stdout.write(text),
      });
    } finally {
      process.off('SIGINT', interrupt).off('SIGTERM', interrupt);
    }
  });

const schemaBackends = BACKENDS.filter((backend) => backend.cli.schema !== undefined);

program
  .command('schema')
  .description(
    `create baton's ${listed(schemaBackends.map((backend) => backend.title))} schema (tables and functions) now, as connect() would on first use; --print only prints its SQL`,
  )
  .argument('<url>', schemaBackends.map((backend) => backend.cli.schema!.urlHelp).join('; '))
  .option('--print', 'print the SQL (one transaction) instead of running it, for a DBA to review and apply', false)
  .option('--connect-timeout <ms>', 'give up connecting after this many milliseconds', milliseconds, 5_000)
  .action(async (url: string, options: { print: boolean; connectTimeout: number }) => {
    const { backend, parsed } = resolveUrl(url);
    warnPasswordInArguments(url);
    const schema = backend.cli.schema;
    if (schema === undefined)
      throw new InvalidArgumentError(
        'url',
        `${parsed.scheme}:`,
        `${listed(schemaBackends.map((each) => each.cli.schema!.urls))}: only ${listed(
          schemaBackends.map((each) => each.title),
          'and',
        )} ${schemaBackends.length === 1 ? 'has' : 'have'} a schema to create`,
      );
    process.stdout.write(
      options.print ? schema.sql(parsed.target) : await schema.apply(parsed.target, options.connectTimeout),
    );
  });

program
  .command('fence-schema')
  .description('print the SQL of the resource-side fence (baton-locks/fence) for the database you write to')
  .option('--print', 'print the SQL (one transaction) for a DBA to review and apply', false)
  .option('--backend <name>', 'the database kind: postgres or mysql (MariaDB too)', 'postgres')
  .option(
    '--schema <name>',
    "where the marks table and the fence's routines go: a PostgreSQL schema (default baton_fence), a MySQL database (default: the session's current one)",
  )
  .action((options: { print: boolean; backend: string; schema?: string }) => {
    process.stdout.write(fenceSchemaText(options));
  });

/**
 * A password given in the URL on the command line can be read by any user of the machine (`ps`):
 * baton uses it, but its backend may say how to pass it instead. The password itself is not shown.
 */
function warnPasswordInArguments(url: string): void {
  const warning = schemeOf(url)?.cli.passwordWarning?.(url);
  if (warning !== undefined) process.stderr.write(`baton: warning: ${warning}\n`);
}

/** The backend a URL's scheme names, if any (the URL need not parse). */
function schemeOf(url: string): Backend | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(url.trim())?.[1];
  return scheme === undefined ? undefined : backendForScheme(scheme);
}

/**
 * Credentials come from the environment, never from arguments (which any user can read in `ps`):
 * each backend reads its own variables (`baton inspect --help` lists them); an operator's shell may
 * hold several backends' at once, and only the URL's backend's are used.
 */
export function credentialsFromEnvironment(env: NodeJS.ProcessEnv, url: string): ConnectOptions {
  return schemeOf(url)?.cli.credentials?.(env) ?? {};
}

// Run a command under a lock or leadership (src/commands/), with credentials from the environment.
registerLock(program, { credentials: credentialsFromEnvironment, warnPasswordInArguments });
registerElect(program, { credentials: credentialsFromEnvironment, warnPasswordInArguments });
registerOnce(program, { credentials: credentialsFromEnvironment, warnPasswordInArguments });
registerRelease(program, { credentials: credentialsFromEnvironment, warnPasswordInArguments });

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`baton: ${error instanceof Error ? error.message : String(error)}\n`);
  // 2: the command was given something invalid; 1: it could not do its work (e.g. server unreachable).
  process.exitCode = error instanceof InvalidArgumentError || error instanceof InvalidNameError ? 2 : 1;
});

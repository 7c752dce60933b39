#!/usr/bin/env node
import { readFileSync } from 'node:fs';

import { Command, InvalidArgumentError as CommanderArgumentError } from 'commander';

import { InvalidArgumentError, InvalidNameError } from '../recipes/errors.js';
import { schemaSql } from './backends/postgres/schema.js';
import { registerElect } from './commands/elect.js';
import { registerLock } from './commands/lock.js';
import type { ConnectOptions } from './connect.js';
import { runDemo } from './demo.js';
import { runInspect } from './inspect.js';
import { parseUrl } from './url.js';

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
  .description('Coordination recipes on ZooKeeper, etcd, PostgreSQL, Redis and memory')
  .version(packageVersion(), '-V, --version', 'print the version');

program
  .command('demo')
  .description(
    'a settlement scheduler: workers take a fair mutex every tick, one is cut off mid-job, a fenced ledger refuses its late write; then readers and a writer share a configuration',
  )
  .option(
    '--backend <url>',
    'connection URL, e.g. zk://127.0.0.1:2181/demo, etcd://127.0.0.1:2379/demo or redis://127.0.0.1:6379?namespace=demo (each worker then runs in its own process)',
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
  .argument(
    '<url>',
    'connection URL, e.g. zk://127.0.0.1:2181/myapp, etcd://127.0.0.1:2379/myapp or redis://127.0.0.1:6379/0?namespace=myapp',
  )
  .argument('<name>', 'the lock name, e.g. payments/settlement')
  .option('--json', 'print JSON (one object per line with --watch)', false)
  .option('--watch', 'print again at every change of the queue, until interrupted', false)
  .addHelpText(
    'after',
    "\nCredentials are read from the environment: BATON_ZK_DIGEST=user:password, BATON_ETCD_USER and BATON_ETCD_PASSWORD, PostgreSQL's PGPASSWORD (or ~/.pgpass), BATON_REDIS_USER and BATON_REDIS_PASSWORD.",
  )
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

program
  .command('schema')
  .description(
    "create baton's PostgreSQL schema (tables and functions) now, as connect() would on first use; --print only prints its SQL",
  )
  .argument(
    '<url>',
    'postgres://user@host:5432/database[?schema=baton] (the password from PGPASSWORD or ~/.pgpass, or in the URL)',
  )
  .option('--print', 'print the SQL (one transaction) instead of running it, for a DBA to review and apply', false)
  .option('--connect-timeout <ms>', 'give up connecting after this many milliseconds', milliseconds, 5_000)
  .action(async (url: string, options: { print: boolean; connectTimeout: number }) => {
    const parsed = parseUrl(url);
    warnPasswordInArguments(url);
    if (parsed.postgres === undefined)
      throw new InvalidArgumentError(
        'url',
        `${parsed.scheme}:`,
        'a postgres:// or postgresql:// URL: only PostgreSQL has a schema to create',
      );
    if (options.print) {
      process.stdout.write(`BEGIN;\n${schemaSql(parsed.postgres.schema)}COMMIT;\n`);
      return;
    }
    const { applySchema } = await import('./backends/postgres/open.js');
    const outcome = await applySchema(parsed.postgres, options.connectTimeout);
    process.stdout.write(
      outcome === 'created'
        ? `created baton's schema "${parsed.postgres.schema}" at ${parsed.postgres.shown}\n`
        : `baton's schema "${parsed.postgres.schema}" is there already at ${parsed.postgres.shown}\n`,
    );
  });

/**
 * A password given in the URL on the command line can be read by any user of the machine (`ps`):
 * baton uses it, but says to pass it in PGPASSWORD (or ~/.pgpass) instead. The password itself is not shown.
 */
function warnPasswordInArguments(url: string): void {
  if (!/^postgres(?:ql)?:\/\//i.test(url.trim())) return;
  const authority = url.trim().slice(url.trim().indexOf('//') + 2, Math.max(url.trim().lastIndexOf('@'), 0));
  if (authority.includes(':') || /[?&]password=/i.test(url)) {
    process.stderr.write(
      'baton: warning: the URL holds a password, which other users can read in the process list; leave it out and set PGPASSWORD (or use ~/.pgpass)\n',
    );
  }
}

/**
 * Credentials come from the environment, never from arguments (which any user can read in `ps`):
 * BATON_ZK_DIGEST=user:password, BATON_ETCD_USER and BATON_ETCD_PASSWORD, BATON_REDIS_USER and
 * BATON_REDIS_PASSWORD (a redis URL may hold them too, but a URL on the command line is seen by `ps`).
 */
export function credentialsFromEnvironment(env: NodeJS.ProcessEnv, url: string): ConnectOptions {
  const scheme = url.trim().toLowerCase().split(':')[0];
  const digest = env['BATON_ZK_DIGEST'];
  const user = env['BATON_ETCD_USER'];
  // Each backend's own credentials only: an operator's shell may hold both.
  if ((scheme === 'zk' || scheme === 'zookeeper') && digest) return { auth: { scheme: 'digest', credentials: digest } };
  if (scheme === 'etcd' && user)
    return { etcd: { auth: { username: user, password: env['BATON_ETCD_PASSWORD'] ?? '' } } };
  const redisUser = env['BATON_REDIS_USER'];
  const redisPassword = env['BATON_REDIS_PASSWORD'];
  if ((scheme === 'redis' || scheme === 'rediss') && (redisUser || redisPassword)) {
    return {
      redis: { ...(redisUser ? { username: redisUser } : {}), ...(redisPassword ? { password: redisPassword } : {}) },
    };
  }
  return {};
}

// Run a command under a lock or leadership (src/commands/), with credentials from the environment.
registerLock(program, { credentials: credentialsFromEnvironment, warnPasswordInArguments });
registerElect(program, { credentials: credentialsFromEnvironment, warnPasswordInArguments });

program.parseAsync(process.argv).catch((error: unknown) => {
  process.stderr.write(`baton: ${error instanceof Error ? error.message : String(error)}\n`);
  // 2: the command was given something invalid; 1: it could not do its work (e.g. server unreachable).
  process.exitCode = error instanceof InvalidArgumentError || error instanceof InvalidNameError ? 2 : 1;
});

import { InvalidArgumentError } from '../../../recipes/errors.js';
import type { Backend } from '../backend.js';
import { flag } from '../option-checks.js';
import { redactUrl } from '../url-forms.js';
import type { PostgresProbe } from './probe.js';
import { schemaSql } from './schema.js';
import { parsePostgresUrl, type PostgresUrl } from './url.js';

/** PostgreSQL's own option: whether to create baton's schema when it is missing. */
interface PostgresSettings {
  readonly createSchema: boolean | undefined;
}

/**
 * PostgreSQL: `postgres://[user[:password]@]host[:port]/database[?namespace=NS]` (also `postgresql://`);
 * node-postgres reads the URL itself (and the PG* environment variables for what it leaves out).
 */
export const postgres: Backend<PostgresUrl, PostgresSettings> = {
  scheme: 'postgres',
  title: 'PostgreSQL',
  schemes: ['postgres'],
  aliases: ['postgresql'],
  urlForm: 'postgres://[user[:password]@]host[:port]/database[?namespace=NS]',
  parseUrl(url, expected) {
    if (!/^postgres(?:ql)?:\/\//i.test(url)) throw new InvalidArgumentError('url', redactUrl(url), expected);
    const target = parsePostgresUrl(url);
    return { scheme: 'postgres', hosts: [], namespace: target.namespace, target };
  },
  resolvesHosts: false,
  options: {
    keys: ['createSchema'],
    check: (given) => ({
      createSchema: given['createSchema'] === undefined ? undefined : flag(given['createSchema'], 'createSchema'),
    }),
    refuseElsewhere({ createSchema }) {
      if (createSchema !== undefined)
        throw new InvalidArgumentError('createSchema', createSchema, 'postgres: URLs only');
    },
  },
  async open({ url, own, sessionTimeoutMs, connectTimeoutMs, signal, probe }) {
    const { PostgresDriver } = await import('./driver.js');
    const { connectionString, shown, schema } = url.target;
    return PostgresDriver.open(
      {
        connectionString,
        shown,
        namespace: url.namespace,
        schema,
        sessionTimeoutMs,
        connectTimeoutMs,
        createSchema: own.createSchema ?? true,
        signal,
      },
      probe as PostgresProbe | undefined,
    );
  },
  testing: async () => (await import('./testing.js')).default,
  cli: {
    example: (namespace) => `postgres://baton@127.0.0.1:5432/app?namespace=${namespace}`,
    credentialsHelp: "PostgreSQL's PGPASSWORD (or ~/.pgpass)",
    passwordWarning: passwordInUrl,
    schema: {
      urls: 'a postgres:// or postgresql:// URL',
      urlHelp:
        'postgres://user@host:5432/database[?schema=baton] (the password from PGPASSWORD or ~/.pgpass, or in the URL)',
      sql: (target) => `BEGIN;\n${schemaSql(target.schema)}COMMIT;\n`,
      async apply(target, connectTimeoutMs) {
        const { applySchema } = await import('./open.js');
        const outcome = await applySchema(target, connectTimeoutMs);
        return outcome === 'created'
          ? `created baton's schema "${target.schema}" at ${target.shown}\n`
          : `baton's schema "${target.schema}" is there already at ${target.shown}\n`;
      },
    },
  },
};

/**
 * A password given in the URL on the command line can be read by any user of the machine (`ps`):
 * baton uses it, but says to pass it in PGPASSWORD (or ~/.pgpass) instead. The password itself is not shown.
 */
function passwordInUrl(url: string): string | undefined {
  const trimmed = url.trim();
  if (!/^postgres(?:ql)?:\/\//i.test(trimmed)) return undefined;
  const authority = trimmed.slice(trimmed.indexOf('//') + 2, Math.max(trimmed.lastIndexOf('@'), 0));
  if (!authority.includes(':') && !/[?&]password=/i.test(url)) return undefined;
  return 'the URL holds a password, which other users can read in the process list; leave it out and set PGPASSWORD (or use ~/.pgpass)';
}

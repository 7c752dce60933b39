import type { ConnectionOptions as TlsOptions } from 'node:tls';

import { InvalidArgumentError } from '../../../recipes/errors.js';
import type { Backend } from '../backend.js';
import { flag, isPlainObject } from '../option-checks.js';
import { redactUrl } from '../url-forms.js';
import type { MysqlProbe } from './probe.js';
import { schemaScript } from './schema.js';
import { MYSQL_URL_FORM, type MysqlUrl, parseMysqlUrl } from './url.js';

/** MySQL's own options (the `mysql` key of `connect()`), checked. */
interface MysqlSettings {
  readonly given: boolean;
  readonly user: string | undefined;
  readonly password: string | undefined;
  readonly tls: TlsOptions | undefined;
  readonly createSchema: boolean;
}

const KEYS = ['user', 'password', 'tls', 'createSchema'];

function checkMysql(value: unknown): MysqlSettings {
  if (value === undefined)
    return { given: false, user: undefined, password: undefined, tls: undefined, createSchema: true };
  // A string given here may be the password itself: it is not shown.
  if (!isPlainObject(value))
    throw new InvalidArgumentError(
      'mysql',
      typeof value === 'string' ? '***' : value,
      'an object: { user, password, tls, createSchema }',
    );
  const unknown = Object.keys(value).find((key) => !KEYS.includes(key));
  // The value is not shown: a misspelled `password` key holds a password.
  if (unknown !== undefined) throw new InvalidArgumentError(`mysql.${unknown}`, '***', `one of ${KEYS.join(', ')}`);
  const text = (key: string): string | undefined => {
    const given = value[key];
    if (given !== undefined && typeof given !== 'string')
      throw new InvalidArgumentError(`mysql.${key}`, key === 'password' ? '***' : given, 'a string');
    return given;
  };
  const tls = value['tls'];
  if (tls !== undefined && !isPlainObject(tls))
    throw new InvalidArgumentError('mysql.tls', tls, "an object of node:tls's connection options");
  return {
    given: true,
    user: text('user'),
    password: text('password'),
    tls: tls,
    createSchema: value['createSchema'] === undefined ? true : flag(value['createSchema'], 'mysql.createSchema'),
  };
}

/** The URL with the options' user and password, which take the place of the URL's. */
function withCredentials(url: MysqlUrl, own: MysqlSettings): MysqlUrl {
  return { ...url, user: own.user ?? url.user, password: own.password ?? url.password };
}

/**
 * MySQL and MariaDB: `mysql://[user[:password]@]host[:port]/database[?namespace=NS]` (also `mariadb://`),
 * on mysql2, an optional peer dependency loaded only for these URLs.
 */
export const mysql: Backend<MysqlUrl, MysqlSettings> = {
  scheme: 'mysql',
  title: 'MySQL',
  schemes: ['mysql'],
  aliases: ['mariadb'],
  urlForm: MYSQL_URL_FORM,
  parseUrl(url, expected) {
    if (!/^(mysql|mariadb):\/\//i.test(url)) throw new InvalidArgumentError('url', redactUrl(url), expected);
    const target = parseMysqlUrl(url);
    return { scheme: 'mysql', hosts: [`${target.host}:${target.port}`], namespace: target.namespace, target };
  },
  resolvesHosts: true,
  options: {
    keys: ['mysql'],
    check: (given) => checkMysql(given['mysql']),
    refuseElsewhere({ given }) {
      if (given) throw new InvalidArgumentError('mysql', '{…}', 'mysql:// URLs only');
    },
  },
  async open({ url, own, sessionTimeoutMs, connectTimeoutMs, signal, probe }) {
    const { MysqlDriver } = await import('./driver.js');
    return MysqlDriver.open(
      {
        url: withCredentials(url.target, own),
        sessionTimeoutMs,
        connectTimeoutMs,
        createSchema: own.createSchema,
        tls: own.tls,
        signal,
      },
      probe as MysqlProbe | undefined,
    );
  },
  testing: async () => (await import('./testing.js')).default,
  cli: {
    example: (namespace) => `mysql://baton@127.0.0.1:3306/app?namespace=${namespace}`,
    credentialsHelp: "MYSQL_PWD (the password of the URL's user)",
    credentials: (env) => (env['MYSQL_PWD'] ? { mysql: { password: env['MYSQL_PWD'] } } : {}),
    passwordWarning: passwordInUrl,
    schema: {
      urls: 'a mysql:// or mariadb:// URL',
      urlHelp: 'mysql://user@host:3306/database (the password from MYSQL_PWD, or in the URL)',
      sql: () => schemaScript(),
      async apply(target, connectTimeoutMs) {
        const { applySchema } = await import('./open.js');
        const withPassword = { ...target, password: target.password || (process.env['MYSQL_PWD'] ?? '') };
        const outcome = await applySchema(withPassword, connectTimeoutMs);
        return outcome === 'created'
          ? `created baton's tables in "${target.database}" at ${target.shown}\n`
          : `baton's tables are there already in "${target.database}" at ${target.shown}\n`;
      },
    },
  },
};

/** A password in a URL on the command line can be read by any user of the machine (`ps`). */
function passwordInUrl(url: string): string | undefined {
  const trimmed = url.trim();
  if (!/^(mysql|mariadb):\/\//i.test(trimmed)) return undefined;
  const authority = trimmed.slice(trimmed.indexOf('//') + 2, Math.max(trimmed.lastIndexOf('@'), 0));
  if (!authority.includes(':')) return undefined;
  return 'the URL holds a password, which other users can read in the process list; leave it out and set MYSQL_PWD';
}

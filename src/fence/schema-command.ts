import { InvalidArgumentError } from '../../recipes/errors.js';
import { MysqlFence } from './mysql.js';
import { PostgresFence } from './postgres.js';
import { FENCE_SCHEMA } from './postgres-schema.js';

/** The options of `baton fence-schema`, as commander parsed them. */
export interface FenceSchemaOptions {
  readonly print: boolean;
  readonly backend: string;
  /** PostgreSQL: the schema (default `baton_fence`); MySQL: the database (default: the session's current one). */
  readonly schema?: string | undefined;
}

/**
 * What `baton fence-schema --print` writes: the fence's DDL for a DBA to review and apply. PostgreSQL's
 * is one transaction; MySQL's a script with `DELIMITER` lines for the mysql client (its DDL commits on
 * its own). The command only prints: the fence lives in the user's database, not baton's.
 */
export function fenceSchemaText(options: FenceSchemaOptions): string {
  if (!options.print)
    throw new InvalidArgumentError(
      'options',
      'no --print',
      '--print (apply the SQL with psql or mysql, or PostgresFence/MysqlFence.createSchema)',
    );
  if (options.backend === 'mysql' || options.backend === 'mariadb')
    return new MysqlFence(options.schema === undefined ? {} : { database: options.schema }).schemaSql();
  if (options.backend !== 'postgres')
    throw new InvalidArgumentError(
      '--backend',
      options.backend,
      'postgres or mysql (Redis and compare-and-set fences need no schema)',
    );
  return `BEGIN;\n${new PostgresFence({ schema: options.schema ?? FENCE_SCHEMA }).schemaSql()}COMMIT;\n`;
}

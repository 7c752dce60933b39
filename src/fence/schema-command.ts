import { InvalidArgumentError } from '../../recipes/errors.js';
import { PostgresFence } from './postgres.js';

/** The options of `baton fence-schema`, as commander parsed them. */
export interface FenceSchemaOptions {
  readonly print: boolean;
  readonly backend: string;
  readonly schema: string;
}

/**
 * What `baton fence-schema --print` writes: the fence's DDL for a DBA to review and apply (PostgreSQL),
 * in one transaction. The command only prints: the fence lives in the user's database, not baton's.
 */
export function fenceSchemaText(options: FenceSchemaOptions): string {
  if (!options.print)
    throw new InvalidArgumentError(
      'options',
      'no --print',
      '--print (apply the SQL with psql, or PostgresFence.createSchema)',
    );
  if (options.backend !== 'postgres')
    throw new InvalidArgumentError(
      '--backend',
      options.backend,
      'postgres (Redis and compare-and-set fences need no schema)',
    );
  return `BEGIN;\n${new PostgresFence({ schema: options.schema }).schemaSql()}COMMIT;\n`;
}

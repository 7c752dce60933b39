import { BackendError, InvalidArgumentError } from '../../recipes/errors.js';

/** baton's tokens fit a signed 64-bit integer (PostgreSQL's bigint), never negative. */
const MAX_TOKEN = 2n ** 63n - 1n;
/** A resource name is the user's own; long enough for a path, short enough for an index key. */
const MAX_RESOURCE_LENGTH = 512;

/** A fencing token as a fence accepts it: a bigint from 0 to 2^63 - 1 (`lock.fencingToken`). */
export function checkToken(token: unknown): bigint {
  if (typeof token !== 'bigint' || token < 0n || token > MAX_TOKEN)
    throw new InvalidArgumentError('fencing token', token, 'a bigint from 0n to 2n ** 63n - 1n (lock.fencingToken)');
  return token;
}

/** A resource name: a non-empty string of at most 512 characters. */
export function checkResource(resource: unknown): string {
  if (typeof resource !== 'string' || resource.length === 0 || resource.length > MAX_RESOURCE_LENGTH)
    throw new InvalidArgumentError(
      'resource',
      resource,
      `a non-empty string of at most ${MAX_RESOURCE_LENGTH} characters`,
    );
  return resource;
}

/** A decimal string from a store as a bigint, or the store's reply was not what the fence wrote. */
export function tokenFromStore(value: unknown, what: string): bigint {
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^(0|[1-9][0-9]{0,18})$/.test(value)) return BigInt(value);
  throw new BackendError(`unexpected ${what} from the store: ${String(value)}`);
}

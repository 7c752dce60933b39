import { InvalidArgumentError } from '../../../recipes/errors.js';
import type { BatonSession } from '../../session.js';
import { MemoryDriver } from './driver.js';

/** Test helper: ends a memory:// session from the "server" side, as an expiry or lease revoke would. */
export function expireMemorySession(session: BatonSession): void {
  const driver = session.backend;
  if (!(driver instanceof MemoryDriver)) throw new InvalidArgumentError('session', session, 'a memory:// session');
  driver.expire();
}

import type { Session } from '../../../recipes/contract.js';
import { InvalidArgumentError } from '../../../recipes/errors.js';
import { internalsOf } from '../../session.js';
import { MemoryDriver } from './driver.js';

/** Ends a memory:// session from the "server" side, as an expiry or lease revoke would. */
export function expireMemorySession(session: Session): void {
  const driver = internalsOf(session).backend;
  if (!(driver instanceof MemoryDriver)) throw new InvalidArgumentError('session', session, 'a memory:// session');
  driver.expire();
}

import { markerOf } from './names.js';

const SEGMENT = /^[A-Za-z0-9._-]+$/;
/** A sequential znode's 10-digit suffix: a client unknown to baton may believe it queues here. */
const SEQUENTIAL = /\d{10}$/;

/**
 * Children of a queue directory that are no client's entry and cannot be a nested lock's directory (a
 * valid name segment not starting with `_c_`), and every other sequential node, whose owner may
 * believe it queues in this lock. A nested lock named with a 10-digit suffix is reported too.
 */
export function foreignChildren(children: readonly string[]): string[] {
  return children.filter(
    (child) =>
      markerOf(child) < 0 &&
      (!SEGMENT.test(child) || child.startsWith('_c_') || child === '.' || child === '..' || SEQUENTIAL.test(child)),
  );
}

import { describe, expect, it } from 'vitest';

import { describeDialFailure } from '../../src/backends/dial.js';

/** An error as Node's sockets and resolver make them: a message and a code. */
function systemError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

describe('a failed dial in words', () => {
  it.each([
    [
      systemError('connect ECONNREFUSED 127.0.0.1:1', 'ECONNREFUSED'),
      'connection refused (connect ECONNREFUSED 127.0.0.1:1)',
    ],
    [
      systemError('connect EHOSTUNREACH 10.1.2.3:2181', 'EHOSTUNREACH'),
      'host unreachable (connect EHOSTUNREACH 10.1.2.3:2181)',
    ],
    [
      systemError('connect ENETUNREACH 224.0.0.1:2181', 'ENETUNREACH'),
      'network unreachable (connect ENETUNREACH 224.0.0.1:2181)',
    ],
    [systemError('connect ETIMEDOUT 10.1.2.3:2181', 'ETIMEDOUT'), 'timed out (connect ETIMEDOUT 10.1.2.3:2181)'],
    [systemError('getaddrinfo ENOTFOUND db.invalid', 'ENOTFOUND'), 'name not found (getaddrinfo ENOTFOUND db.invalid)'],
    [
      systemError('getaddrinfo EAI_AGAIN db.example', 'EAI_AGAIN'),
      'name lookup failed (temporary resolver failure) (getaddrinfo EAI_AGAIN db.example)',
    ],
    // gRPC names the socket's error in its message only.
    [
      new Error('14 UNAVAILABLE: No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1.'),
      'connection refused (14 UNAVAILABLE: No connection established. Last error: Error: connect ECONNREFUSED 127.0.0.1:1.)',
    ],
    [
      new Error('14 UNAVAILABLE: Name resolution failed for target dns:db.example:2379'),
      'name lookup failed (14 UNAVAILABLE: Name resolution failed for target dns:db.example:2379)',
    ],
    [
      new Error('4 DEADLINE_EXCEEDED: Deadline exceeded after 0.5s'),
      'timed out: no answer within 500 ms (4 DEADLINE_EXCEEDED: Deadline exceeded after 0.5s)',
    ],
    [undefined, 'timed out: no answer within 500 ms'],
  ])('%s', (error, words) => {
    expect(describeDialFailure(error, 500)).toBe(words);
  });
});

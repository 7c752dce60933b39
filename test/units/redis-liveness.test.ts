import { describe, expect, it } from 'vitest';

import { LivenessKeys } from '../../src/backends/redis/liveness.js';

const T = 1_000;

describe('Redis liveness keys: the session is acknowledged at the oldest setting of any of its keys', () => {
  it('a lock entered by an enqueue sent before a renewal keeps the acknowledgement at the enqueue until a renewal covers it', () => {
    const keys = new LivenessKeys('baton:session:s', 0, T);
    // The enqueue is sent at 10; a renewal sent at 20 does not cover the lock (not entered yet) and is answered after the enqueue.
    const round = keys.keys();
    keys.entered('q', 'baton:{ns/q}:s:s', 's-1', 10);
    keys.renewed(round, 20);
    expect(keys.acknowledge()).toBe(10);
    const next = keys.keys();
    expect(next.map(({ key }) => key)).toEqual(['baton:session:s', 'baton:{ns/q}:s:s']);
    keys.renewed(next, 30);
    expect(keys.acknowledge()).toBe(30);
  });

  it("a lock's key is renewed until its last entry leaves, then left out, and still deleted by a close", () => {
    const keys = new LivenessKeys('baton:session:s', 0, T);
    keys.entered('q', 'baton:{ns/q}:s:s', 's-1', 5);
    keys.entered('q', 'baton:{ns/q}:s:s', 's-2', 6);
    keys.left('q', 's-1');
    expect(keys.has('q')).toBe(true);
    keys.left('q', 's-2');
    expect(keys.has('q')).toBe(false);
    expect(keys.keys()).toEqual([{ key: 'baton:session:s' }]);
    // Left behind: the acknowledgement no longer waits for it.
    keys.renewed(keys.keys(), 50);
    expect(keys.acknowledge()).toBe(50);
    expect(keys.lockKeys()).toEqual(['baton:{ns/q}:s:s']);
  });
});

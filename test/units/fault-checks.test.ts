import { describe, expect, it } from 'vitest';

import { checkIntervals, excusedFrom, type Interval } from '../harness/faults/fault-contender.js';

// The fault tests' verdicts rest on these checks: one that excuses too much hides a second holder,
// one that excuses too little fails a run that fencing covered.
const hold = (worker: number, token: number, from: number, to: number, forcedAt?: bigint): Interval => ({
  worker,
  session: `s${worker}`,
  token: String(token),
  from: String(from),
  to: String(to),
  believed: true,
  lost: false,
  ...(forcedAt !== undefined && { forcedAt: String(forcedAt) }),
});

describe('excusedFrom (when a server-side end of a session may cut a hold short unforeseen)', () => {
  it('from the request, for a hold granted before it', () => {
    expect(excusedFrom({ asked: 150n, answered: 160n }, 100n)).toBe(150n);
    expect(excusedFrom({ asked: 150n }, 100n)).toBe(150n);
  });

  it('from the grant, for a hold granted while the request was on its way or the server could still act on it', () => {
    // Measured on etcd: a revoke asked while a member was down was answered 6 s later, 160 ms after
    // the session's next grant; the server had acted after that grant.
    expect(excusedFrom({ asked: 100n, answered: 300n }, 200n)).toBe(200n);
    expect(excusedFrom({ asked: 100n }, 200n)).toBe(200n);
  });

  it('never, for a hold granted after the server answered, or with no request', () => {
    expect(excusedFrom({ asked: 100n, answered: 150n }, 200n)).toBeUndefined();
    expect(excusedFrom(undefined, 200n)).toBeUndefined();
  });
});

describe('checkIntervals', () => {
  it('finds a grant while an earlier holder still believed it held, unless that holder was excused before the grant', () => {
    expect(checkIntervals([hold(1, 1, 0, 100), hold(2, 2, 50, 150)])).toEqual([
      'worker 2 (session s2, token 2) granted while worker 1 (session s1, token 1) still believed it held',
    ]);
    expect(checkIntervals([hold(1, 1, 0, 100, 40n), hold(2, 2, 50, 150)])).toEqual([]);
    expect(checkIntervals([hold(1, 1, 0, 100, 60n), hold(2, 2, 50, 150)])).toHaveLength(1);
  });

  it('finds tokens that do not increase in grant order, excused or not', () => {
    expect(checkIntervals([hold(1, 2, 0, 100, 40n), hold(2, 2, 50, 150)])).toEqual([
      'worker 2 (session s2, token 2) granted after worker 1 (session s1, token 2) with a token not higher',
    ]);
  });
});

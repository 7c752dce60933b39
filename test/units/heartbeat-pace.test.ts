import { afterEach, describe, expect, it } from 'vitest';

import { HeartbeatPace } from '../../src/backends/zookeeper/heartbeat-pace.js';

// The ZooKeeper heartbeat's pace and credit (the argument is in docs/failure-model.md, "The deadline on
// an ensemble"); the follower-partition test shows the outcome on a real ensemble.
describe('HeartbeatPace', () => {
  const paces: HeartbeatPace[] = [];
  afterEach(() => {
    for (const pace of paces.splice(0)) pace.stop();
  });
  const make = (timeoutMs: number): HeartbeatPace => {
    const pace = new HeartbeatPace(timeoutMs, () => undefined);
    paces.push(pace);
    return pace;
  };

  it('beats every half margin while busy and every quarter of the timeout while idle (the keep-alive pace)', () => {
    const pace = make(12_000);
    pace.setMargin(1_200);
    expect(pace.creditEveryMs).toBe(600);
    expect(pace.idleEveryMs).toBe(3_000);
    expect(pace.due(1_000 + 300, 1_000, true)).toBe(true); // the next tick of the timer
    expect(pace.due(1_000 + 2_600, 1_000, false)).toBe(false);
    expect(pace.due(1_000 + 2_700, 1_000, false)).toBe(true); // within half a tick of the idle interval
  });

  it('credits an answer no later than half the margin after the previous heartbeat, however late it was sent', () => {
    const pace = make(12_000);
    pace.setMargin(1_200);
    expect(pace.credit(1_500, 1_000)).toBe(1_500);
    expect(pace.credit(3_000, 1_000)).toBe(1_600); // an idle interval, or a stalled loop: the lag the margin covers stays half of it
  });

  it('never beats slower than idle, nor faster than every 10 ms', () => {
    const pace = make(12_000);
    pace.setMargin(60_000);
    expect(pace.creditEveryMs).toBe(3_000);
    pace.setMargin(0);
    expect(pace.creditEveryMs).toBe(10);
  });
});

import { describe, expect, it } from 'vitest';

import { deadline } from '../../recipes/deadline.js';
import { LockTimeoutError } from '../../recipes/errors.js';
import { ENQUEUES_IN_FLIGHT, EnqueueSlots } from '../../src/backends/enqueue-slots.js';

/** A send that stays in flight until `finish` is called. */
function held(): { send: () => Promise<string>; finish: (value: string) => void; started: () => boolean } {
  let finish: (value: string) => void = () => undefined;
  let started = false;
  return {
    send: () => {
      started = true;
      return new Promise<string>((resolve) => (finish = resolve));
    },
    finish: (value) => finish(value),
    started: () => started,
  };
}

describe('EnqueueSlots: a session sends at most ENQUEUES_IN_FLIGHT enqueues at once', () => {
  it('holds back the ones past the limit and sends them first come first served as places free', async () => {
    const counters = { enqueuesInFlightMost: 0 };
    const slots = new EnqueueSlots(counters);
    const sends = Array.from({ length: ENQUEUES_IN_FLIGHT + 3 }, () => held());
    const results = sends.map((s) => slots.run(s.send));
    expect(sends.filter((s) => s.started())).toHaveLength(ENQUEUES_IN_FLIGHT);
    sends[0]!.finish('a');
    await results[0];
    // The first in line took the freed place, not a later one.
    expect(sends[ENQUEUES_IN_FLIGHT]!.started()).toBe(true);
    expect(sends[ENQUEUES_IN_FLIGHT + 1]!.started()).toBe(false);
    // A call made now waits behind the line (every place is taken: a freed one went to the line at once).
    const late = held();
    const lateResult = slots.run(late.send);
    // One at a time, in order: each one held back has been sent by the time its turn to finish comes.
    for (let i = 1; i < sends.length; i += 1) {
      expect(sends[i]!.started()).toBe(true);
      sends[i]!.finish(String(i));
      await results[i];
    }
    expect(late.started()).toBe(true);
    late.finish('late');
    await expect(lateResult).resolves.toBe('late');
    expect(counters.enqueuesInFlightMost).toBe(ENQUEUES_IN_FLIGHT);
  });

  it('gives up one held back at once when its caller does, and never sends it', async () => {
    const slots = new EnqueueSlots();
    const sends = Array.from({ length: ENQUEUES_IN_FLIGHT }, () => held());
    const results = sends.map((s) => slots.run(s.send));
    const caller = new AbortController();
    const waiting = held();
    const givenUp = slots.run(waiting.send, () => deadline('lock "x"', undefined, [caller.signal]));
    const timed = held();
    const timedOut = slots.run(timed.send, () => deadline('lock "x"', 20, []));
    const reason = new Error('the caller gave up');
    caller.abort(reason);
    await expect(givenUp).rejects.toBe(reason);
    await expect(timedOut).rejects.toBeInstanceOf(LockTimeoutError);
    for (const s of sends) s.finish('done');
    await Promise.all(results);
    expect(waiting.started()).toBe(false);
    expect(timed.started()).toBe(false);
  });

  it('one given up in the middle of the line leaves the others their order, and a give-up once sent changes nothing', async () => {
    const slots = new EnqueueSlots();
    const sends = Array.from({ length: ENQUEUES_IN_FLIGHT }, () => held());
    const results = sends.map((s) => slots.run(s.send));
    const callers = [new AbortController(), new AbortController(), new AbortController()];
    const line = callers.map(() => held());
    const waits = line.map((s, i) => slots.run(s.send, () => deadline('lock "x"', undefined, [callers[i]!.signal])));
    callers[1]!.abort(new Error('the middle one gave up'));
    await expect(waits[1]).rejects.toThrow('the middle one gave up');
    sends[0]!.finish('a');
    await results[0];
    expect(line.map((s) => s.started())).toEqual([true, false, false]);
    // Sent already: its caller's abort now must not reject it (its entry may be written).
    callers[0]!.abort(new Error('too late'));
    line[0]!.finish('first');
    await expect(waits[0]).resolves.toBe('first');
    sends[1]!.finish('b');
    await results[1];
    expect(line[2]!.started()).toBe(true);
    line[2]!.finish('third');
    await expect(waits[2]).resolves.toBe('third');
    for (const s of sends.slice(2)) s.finish('done');
    await Promise.all(results);
    expect(line[1]!.started()).toBe(false);
  });

  it('a caller that gave up before its turn is refused at once', async () => {
    const slots = new EnqueueSlots();
    const sends = Array.from({ length: ENQUEUES_IN_FLIGHT }, () => held());
    const results = sends.map((s) => slots.run(s.send));
    const reason = new Error('gone already');
    const waiting = held();
    await expect(
      slots.run(waiting.send, () => deadline('lock "x"', undefined, [AbortSignal.abort(reason)])),
    ).rejects.toBe(reason);
    for (const s of sends) s.finish('done');
    await Promise.all(results);
    expect(waiting.started()).toBe(false);
  });
});

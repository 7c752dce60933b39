import { describe, expect, it } from 'vitest';

import { BackendError, BatonError, ClosedError, SessionLostError } from '../../recipes/errors.js';
import { DriverCore, type FailurePolicy } from '../../src/backends/core.js';
import type { Start } from '../../src/backends/requests.js';
import type { ConnectionStatus, DriverEvents } from '../../src/driver-port.js';

// The skeleton both server drivers stand on: a failure on the way is sent again, any other is mapped,
// a reply saying the session is gone loses the session before its caller hears of it, and the end
// settles every request. The backends' own suites show it with real servers; these show each rule alone.

const onTheWay = new Error('connection loss');
const gone = new Error('session expired');
const refused = new Error('refused');

const failures: FailurePolicy = {
  retriable: (error) => error === onTheWay,
  sessionGone: (error) => error === gone,
  lostError: (cause) => new SessionLostError('the test session is gone', cause === undefined ? undefined : { cause }),
  map: (error) => {
    if (error instanceof BatonError) return error;
    return error === gone ? new SessionLostError('mapped gone') : new BackendError('mapped', { cause: error });
  },
};

function core(): { core: DriverCore; ended: Error[]; lost: number; statuses: ConnectionStatus[]; sent: () => number } {
  const ended: Error[] = [];
  const statuses: ConnectionStatus[] = [];
  let lost = 0;
  let sent = 0;
  const made = new DriverCore(
    failures,
    { onEnd: (reason) => ended.push(reason), onLost: () => (lost += 1) },
    () => (sent += 1),
  );
  const events: DriverEvents = {
    status: (status) => statuses.push(status),
    ack: () => undefined,
    foreign: () => undefined,
  };
  made.attach(events);
  return {
    core: made,
    ended,
    get lost() {
      return lost;
    },
    statuses,
    sent: () => sent,
  };
}

/** A request that fails with each of `errors` in turn, then answers `value`. */
function failing<T>(errors: unknown[], value: T): { start: Start<T>; attempts: () => number } {
  let attempts = 0;
  return {
    start: (done) => {
      const error = errors[attempts];
      attempts += 1;
      setImmediate(() => (error === undefined ? done(null, value) : done(error)));
    },
    attempts: () => attempts,
  };
}

describe('DriverCore', () => {
  it('sends a request again while it fails on the way, each attempt through the pipeline', async () => {
    const { core: driver, sent } = core();
    const request = failing([onTheWay, onTheWay], 'answer');
    await expect(driver.retry(request.start)).resolves.toBe('answer');
    expect(request.attempts()).toBe(3);
    expect(sent()).toBe(3);
  });

  it('maps any other failure, without sending it again', async () => {
    const { core: driver } = core();
    const request = failing([refused], 'never');
    const error = await driver.retry(request.start).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect((error as BackendError).cause).toBe(refused);
    expect(request.attempts()).toBe(1);
    expect(driver.isOpen).toBe(true);
  });

  it('a reply saying the session is gone loses the session before the caller hears of it; mapping alone never does', async () => {
    const tracked = core();
    expect(tracked.core.mapFailure(gone)).toBeInstanceOf(SessionLostError);
    expect(tracked.core.isOpen).toBe(true);
    const failure = tracked.core.send(failing([gone], 'never').start).catch((error: unknown) => {
      // Lost already, as the caller sees the error.
      expect(tracked.core.status).toBe('lost');
      return error;
    });
    expect(await failure).toBe(gone);
    expect(tracked.statuses).toEqual(['lost']);
    expect(tracked.lost).toBe(1);
    expect(tracked.ended).toHaveLength(1);
    expect(tracked.ended[0]).toBeInstanceOf(SessionLostError);
  });

  it('a watch stream failing with "session gone" loses the session too, before the waiter hears of it', () => {
    const tracked = core();
    expect(tracked.core.streamFailed(refused)).toBeInstanceOf(BackendError);
    expect(tracked.core.isOpen).toBe(true);
    expect(tracked.core.streamFailed(gone)).toBeInstanceOf(SessionLostError);
    expect(tracked.core.status).toBe('lost');
    expect(tracked.statuses).toEqual(['lost']);
    expect(tracked.lost).toBe(1);
  });

  it('the end settles every request in flight, and later requests meet it', async () => {
    const { core: driver, ended } = core();
    const pending = driver.retry<never>(() => undefined);
    driver.end('closed', new ClosedError());
    await expect(pending).rejects.toBeInstanceOf(ClosedError);
    await expect(driver.retry(failing([], 'late').start)).rejects.toBeInstanceOf(ClosedError);
    expect(driver.endError()).toBeInstanceOf(ClosedError);
    expect(ended).toHaveLength(1);
    // A close is not a loss: the session is not told 'lost'.
    driver.lose(new SessionLostError('after the close'));
    expect(driver.status).toBe('closed');
  });

  it('after a loss, a request meets the loss, and a retry in progress stops at it', async () => {
    const { core: driver } = core();
    const retrying = driver.retry(failing([onTheWay, onTheWay, onTheWay, onTheWay], 'never').start);
    await new Promise((resolve) => setTimeout(resolve, 5));
    driver.lose(new SessionLostError('expired'));
    await expect(retrying).rejects.toBeInstanceOf(SessionLostError);
    expect(() => driver.assertOpen()).toThrow(SessionLostError);
  });

  it("tells the session it is lost before the driver's clean-up runs (a clean-up may free entries that still stood for its holders)", () => {
    const order: string[] = [];
    const made = new DriverCore(failures, {
      onEnd: () => order.push('end'),
      onLost: () => order.push('clean-up'),
    });
    made.attach({ status: (status) => order.push(status), ack: () => undefined, foreign: () => undefined });
    made.lose(new SessionLostError('gone'));
    expect(order).toEqual(['end', 'lost', 'clean-up']);
  });

  it('withdraws until the delete is answered: sent again while it fails on the way, noted done once', async () => {
    const { core: driver, sent } = core();
    const request = failing([onTheWay, onTheWay], 'deleted');
    let done = 0;
    await driver.withdraw({ key: 'k', attempt: () => request.start, done: () => (done += 1) });
    expect(request.attempts()).toBe(3);
    expect(sent()).toBe(3);
    expect(done).toBe(1);
  });

  it('a withdraw whose failure says the entry is gone is done; one refused for good is thrown, the entry not forgotten', async () => {
    const { core: driver } = core();
    const goneAlready = new Error('no node');
    let done = 0;
    const steps = { key: 'k', done: () => (done += 1), gone: (error: unknown) => error === goneAlready };
    await driver.withdraw({ ...steps, attempt: () => failing([goneAlready], 'never').start });
    expect(done).toBe(1);
    const refusing = failing([refused], 'never');
    const error = await driver.withdraw({ ...steps, attempt: () => refusing.start }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(BackendError);
    expect(refusing.attempts()).toBe(1);
    expect(done).toBe(1);
  });

  it('a withdraw after the session ended sends nothing; one under way stops at the end', async () => {
    const { core: driver } = core();
    const request = failing([onTheWay, onTheWay, onTheWay, onTheWay, onTheWay], 'never');
    const withdrawing = driver.withdraw({ key: 'k', attempt: () => request.start, done: () => undefined });
    await new Promise((resolve) => setTimeout(resolve, 5));
    driver.end('closed', new ClosedError());
    await expect(withdrawing).resolves.toBeUndefined();
    const later = failing([], 'never');
    await driver.withdraw({ key: 'k', attempt: () => later.start, done: () => undefined });
    expect(later.attempts()).toBe(0);
  });

  it('closes once: the server within the close limit, then the connections; after a loss only the connections', async () => {
    const { core: driver, ended } = core();
    const calls: string[] = [];
    let until = 0;
    const closing = {
      onServer: (limit: number) => {
        until = limit;
        calls.push('server');
        return Promise.resolve();
      },
      disconnect: () => void calls.push('disconnect'),
    };
    const before = Date.now();
    await driver.close(10_000, closing);
    await driver.close(10_000, closing);
    expect(calls).toEqual(['server', 'disconnect']);
    expect(until - before).toBeGreaterThanOrEqual(2_000);
    expect(until - Date.now()).toBeLessThanOrEqual(2_000);
    expect(ended[0]).toBeInstanceOf(ClosedError);
    const { core: lostOne } = core();
    lostOne.lose(new SessionLostError('gone'));
    calls.length = 0;
    await lostOne.close(10_000, closing);
    expect(calls).toEqual(['disconnect']);
    expect(lostOne.status).toBe('closed');
  });

  it('abandons once: the session ends as lost and the connection is dropped, without telling the session twice', () => {
    const { core: driver, ended } = core();
    let dropped = 0;
    const reason = new SessionLostError('deadline passed');
    driver.abandon(reason, () => (dropped += 1));
    driver.abandon(reason, () => (dropped += 1));
    expect(dropped).toBe(1);
    expect(driver.status).toBe('lost');
    expect(ended).toEqual([reason]);
  });
});

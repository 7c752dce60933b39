import { describe, expect, it } from 'vitest';

import { InFlight } from '../../src/backends/requests.js';

// Every request a driver sends goes through InFlight, so that a session's end settles requests the
// client would leave pending. `call` is the callback form the ZooKeeper driver's hot requests use.
describe('InFlight.call', () => {
  it('settles with the outcome the request reports', async () => {
    const requests = new InFlight();
    await expect(requests.call<number>((done) => setImmediate(() => done(null, 7)))).resolves.toBe(7);
    const failure = new Error('refused');
    await expect(requests.call((done) => done(failure))).rejects.toBe(failure);
  });

  it('rejects a request that throws as it is sent, and forgets it', async () => {
    const requests = new InFlight();
    const invalid = new Error('invalid path');
    await expect(
      requests.call(() => {
        throw invalid;
      }),
    ).rejects.toBe(invalid);
    // Requests sent after it are still ended by the session's end.
    const pending = requests.call<never>(() => undefined);
    const reason = new Error('session ended');
    requests.end(reason);
    await expect(pending).rejects.toBe(reason);
  });

  it('the end rejects every pending request, and a late answer changes nothing; no request is sent after it', async () => {
    const requests = new InFlight();
    let answer: ((error: unknown, value?: string) => void) | undefined;
    const pending = requests.call<string>((done) => (answer = done));
    const reason = new Error('closed');
    requests.end(reason);
    answer!(null, 'late');
    await expect(pending).rejects.toBe(reason);
    let sent = false;
    await expect(requests.call(() => (sent = true))).rejects.toBe(reason);
    expect(sent).toBe(false);
  });

  it('the failure hook sees a failed request first, and the request settles even when the hook throws', async () => {
    const seen: unknown[] = [];
    const failure = new Error('refused');
    const hookBug = new Error('hook bug');
    const requests = new InFlight((error) => {
      seen.push(error);
      throw hookBug;
    });
    let answer: ((error: unknown) => void) | undefined;
    const pending = requests.call((done) => (answer = done));
    expect(() => answer!(failure)).toThrow(hookBug);
    expect(seen).toEqual([failure]);
    await expect(pending).rejects.toBe(failure);
    // A success does not pass through the hook.
    await expect(requests.call<number>((done) => done(null, 1))).resolves.toBe(1);
    expect(seen).toEqual([failure]);
  });

  it('requests settling out of order leave their places to later ones, and the end settles exactly those still pending', async () => {
    const requests = new InFlight();
    const answers: ((error: unknown, value?: number) => void)[] = [];
    const send = (): Promise<number> => requests.call<number>((done) => answers.push(done));
    const first = [send(), send(), send(), send(), send()];
    answers[1]!(null, 1);
    answers[3]!(null, 3);
    const later = [send(), send(), send()]; // two of them in the places just left
    answers[6]!(null, 6);
    answers[1]!(null, 99); // a second answer to a settled request frees nothing
    const reason = new Error('ended');
    requests.end(reason);
    const outcomes = await Promise.allSettled([...first, ...later]);
    expect(
      outcomes.map((o) => (o.status === 'fulfilled' ? o.value : o.reason === reason ? 'ended' : o.reason)),
    ).toEqual(['ended', 1, 'ended', 3, 'ended', 'ended', 6, 'ended']);
  });

  it("with recover, every failure settles through it once: the request's own, a refusal as it is sent, and the end", async () => {
    const seen: string[] = [];
    const requests = new InFlight((error) => seen.push(`hook ${(error as Error).message}`));
    const recover = (error: unknown): number => {
      seen.push(`recover ${(error as Error).message}`);
      if ((error as Error).message === 'lost reply') return 42; // as a retry would answer
      throw new Error(`mapped ${(error as Error).message}`);
    };
    await expect(requests.call<number>((done) => done(new Error('lost reply')), recover)).resolves.toBe(42);
    await expect(requests.call<number>((done) => done(new Error('refused')), recover)).rejects.toThrow(
      'mapped refused',
    );
    await expect(
      requests.call<number>(() => {
        throw new Error('invalid path');
      }, recover),
    ).rejects.toThrow('mapped invalid path');
    // A success does not pass through it.
    await expect(requests.call<number>((done) => done(null, 1), recover)).resolves.toBe(1);
    let answer: ((error: unknown) => void) | undefined;
    const pending = requests.call<number>((done) => (answer = done), recover);
    requests.end(new Error('closed'));
    await expect(pending).rejects.toThrow('mapped closed');
    // A late failure reaches the hook, but the request is not settled (or retried) a second time.
    answer!(new Error('connection loss'));
    await expect(requests.call<number>((done) => done(null, 2), recover)).rejects.toThrow('mapped closed');
    expect(seen).toEqual([
      'hook lost reply',
      'recover lost reply',
      'hook refused',
      'recover refused',
      'recover invalid path',
      'recover closed',
      'hook connection loss',
      'recover closed',
    ]);
  });
});

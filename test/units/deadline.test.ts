import { getEventListeners } from 'node:events';

import { describe, expect, it } from 'vitest';

import { deadline } from '../../recipes/deadline.js';
import { LockTimeoutError } from '../../recipes/errors.js';

// The deadline is the signal every contended wait hands to its backend: these are the parts of
// AbortSignal's behaviour the backends rely on, and the cleanup that keeps a session's signal free of
// one listener per acquisition.
describe('deadline', () => {
  it("many waits on one caller's signal put one listener on it, gone with the last; an abort reaches each wait once", () => {
    const caller = new AbortController();
    const waits = Array.from({ length: 1_000 }, (_, i) => deadline(`lock "${i}"`, undefined, [caller.signal]));
    // Node's EventTarget walks a signal's listeners at every add and remove: one listener keeps that flat.
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(1);
    for (const wait of waits.slice(0, 500)) wait.dispose();
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(1);
    const reason = new Error('the batch gave up');
    caller.abort(reason);
    expect(waits.slice(0, 500).filter((wait) => wait.signal.aborted)).toHaveLength(0);
    expect(waits.slice(500).every((wait) => wait.signal.reason === reason)).toBe(true);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
    const again = new AbortController();
    const two = [deadline('a', undefined, [again.signal]), deadline('b', undefined, [again.signal])];
    for (const wait of two) wait.dispose();
    expect(getEventListeners(again.signal, 'abort'), 'the last dispose removes it').toHaveLength(0);
    const after = deadline('c', undefined, [again.signal]);
    expect(getEventListeners(again.signal, 'abort'), 'and the next wait adds it again').toHaveLength(1);
    again.abort(reason);
    expect(after.signal.reason).toBe(reason);
  });

  it('aborts with the source reason, calls each listener once, and leaves no listener on the sources', () => {
    const caller = new AbortController();
    const session = new AbortController();
    const wait = deadline('lock "a"', undefined, [caller.signal, session.signal]);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(1);
    expect(getEventListeners(session.signal, 'abort')).toHaveLength(1);
    const calls: string[] = [];
    wait.signal.addEventListener('abort', () => calls.push('first'));
    const removed = (): number => calls.push('removed');
    wait.signal.addEventListener('abort', removed);
    wait.signal.removeEventListener('abort', removed);
    wait.signal.addEventListener('abort', () => calls.push('second'));
    const reason = new Error('stop');
    caller.abort(reason);
    session.abort(new Error('later'));
    expect(calls).toEqual(['first', 'second']);
    expect(wait.signal.aborted).toBe(true);
    expect(wait.signal.reason).toBe(reason);
    expect(() => wait.throwIfCancelled()).toThrow(reason);
    expect(() => wait.signal.throwIfAborted()).toThrow(reason);
    expect(getEventListeners(caller.signal, 'abort')).toHaveLength(0);
    expect(getEventListeners(session.signal, 'abort')).toHaveLength(0);
    // Like an AbortSignal: a listener added once aborted never runs.
    wait.signal.addEventListener('abort', () => calls.push('late'));
    wait.cancel(new Error('too late'));
    expect(calls).toEqual(['first', 'second']);
    expect(wait.signal.reason).toBe(reason);
  });

  it('starts aborted from a source that already is, with nothing installed', () => {
    const session = new AbortController();
    const caller = new AbortController();
    const reason = new Error('already');
    caller.abort(reason);
    const wait = deadline('lock "a"', 50, [session.signal, caller.signal]);
    expect(wait.signal.aborted).toBe(true);
    expect(wait.signal.reason).toBe(reason);
    expect(getEventListeners(session.signal, 'abort')).toHaveLength(0);
  });

  it('a timeout aborts with LockTimeoutError but does not count as cancelled', async () => {
    const session = new AbortController();
    const wait = deadline('lock "a"', 5, [session.signal], 1_000);
    await new Promise<void>((resolve) => wait.signal.addEventListener('abort', resolve));
    expect(wait.signal.reason).toBeInstanceOf(LockTimeoutError);
    expect((wait.signal.reason as Error).message).toContain('1000');
    expect(() => wait.throwIfCancelled()).not.toThrow();
    expect(getEventListeners(session.signal, 'abort')).toHaveLength(0);
  });

  it('cancel ends the wait with its reason; after dispose neither cancel nor the sources reach it', () => {
    const session = new AbortController();
    const cancelled = deadline('lock "a"', 60_000, [session.signal]);
    const reason = new Error('vanished');
    let heard = 0;
    cancelled.signal.addEventListener('abort', () => (heard += 1));
    cancelled.cancel(reason);
    expect(heard).toBe(1);
    expect(() => cancelled.throwIfCancelled()).toThrow(reason);
    expect(getEventListeners(session.signal, 'abort')).toHaveLength(0);

    const disposed = deadline('lock "a"', undefined, [session.signal]);
    disposed.signal.addEventListener('abort', () => (heard += 1));
    disposed.dispose();
    expect(getEventListeners(session.signal, 'abort')).toHaveLength(0);
    disposed.cancel(new Error('after dispose'));
    session.abort(new Error('session ended'));
    expect(disposed.signal.aborted).toBe(false);
    expect(heard).toBe(1);
  });

  it('like an AbortSignal: one listener added twice runs once, and one removed by another during the abort does not run', () => {
    const caller = new AbortController();
    const wait = deadline('lock "a"', undefined, [caller.signal]);
    const calls: string[] = [];
    const twice = (): number => calls.push('twice');
    wait.signal.addEventListener('abort', twice);
    wait.signal.addEventListener('abort', twice);
    const removed = (): number => calls.push('removed');
    wait.signal.addEventListener('abort', () => {
      calls.push('remover');
      wait.signal.removeEventListener('abort', removed);
    });
    wait.signal.addEventListener('abort', removed);
    const once = (): number => calls.push('once');
    wait.signal.addEventListener('abort', once);
    wait.signal.addEventListener('abort', once);
    wait.signal.removeEventListener('abort', once);
    caller.abort(new Error('stop'));
    expect(calls).toEqual(['twice', 'remover']);
  });

  it('a listener that throws does not keep the others from running', async () => {
    const caller = new AbortController();
    const wait = deadline('lock "a"', undefined, [caller.signal]);
    const thrown = new Error('listener failed');
    const uncaught = new Promise<unknown>((resolve) => process.once('uncaughtException', resolve));
    let ran = false;
    wait.signal.addEventListener('abort', () => {
      throw thrown;
    });
    wait.signal.addEventListener('abort', () => (ran = true));
    caller.abort(new Error('stop'));
    expect(ran).toBe(true);
    expect(await uncaught).toBe(thrown);
  });
});

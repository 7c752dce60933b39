import { afterEach, beforeEach, expect } from 'vitest';

import type { LockHandle } from '../../../recipes/handle.js';
import { FencedRegister, writeFenced } from './fenced-register.js';

/** A fenced register of its own for every test of the file; closed after the test. */
export function useRegister(): () => FencedRegister {
  let register: FencedRegister | undefined;
  beforeEach(async () => {
    register = await FencedRegister.start();
  });
  afterEach(async () => {
    await register?.close();
    register = undefined;
  });
  return () => {
    if (register === undefined) throw new Error('the register runs only inside a test');
    return register;
  };
}

/** A holder that believes it holds writes with its token: the register must accept it. */
export async function writeWhileHeld(registerUrl: string, lock: LockHandle): Promise<void> {
  expect(lock.signal.aborted, 'a holder writes only while its signal is not aborted').toBe(false);
  const outcome = await writeFenced(registerUrl, lock.fencingToken);
  expect(
    outcome.accepted,
    `write with token ${lock.fencingToken} refused; the register had seen ${outcome.highest}`,
  ).toBe(true);
}

/**
 * A holder that was cut off writes anyway, after its successor has written. The register refuses it
 * only if the successor's token is higher than the cut-off holder's: this is the check that the
 * tokens really grow from holder to holder (equal or shrinking tokens would let it through).
 */
export async function expectLateWriteRefused(registerUrl: string, lost: LockHandle): Promise<void> {
  const outcome = await writeFenced(registerUrl, lost.fencingToken);
  expect(
    outcome.accepted,
    `late write with token ${lost.fencingToken} accepted; the register had seen ${outcome.highest}`,
  ).toBe(false);
}

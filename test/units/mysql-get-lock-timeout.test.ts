import { describe, expect, it } from 'vitest';

import { getLockTimeout } from '../../src/backends/mysql/get-lock-timeout.js';

describe("MySQL: GET_LOCK's timeout for a wait, by server flavour", () => {
  it.each([
    [0.5, 1],
    [0.05, 1],
    [0.834, 1],
    [1, 1],
    [1.2, 2],
    [2.000000001, 2],
    [2.5, 3],
    [0, 1],
  ])('MySQL 8 (whole seconds, rounded up): %s s -> %s', (seconds, expected) => {
    expect(getLockTimeout('mysql', seconds)).toBe(expected);
  });

  it.each([
    [0.5, 0.5],
    [0.05, 0.05],
    [0.8336, 0.834],
    [1.2, 1.2],
    [2.5, 2.5],
    [0, 0.001],
  ])('MariaDB (fractions kept): %s s -> %s', (seconds, expected) => {
    expect(getLockTimeout('mariadb', seconds)).toBe(expected);
  });
});

import { writeFileSync } from 'node:fs';

import { afterAll, beforeAll, it } from 'vitest';

import { type PgServer, startPostgres } from '../postgres.js';
import { type RedisServer, startRedis } from '../redis.js';

let postgres: PgServer | undefined;
let redis: RedisServer | undefined;

beforeAll(async () => {
  [postgres, redis] = await Promise.all([startPostgres(), startRedis()]);
});

afterAll(async () => {
  await Promise.all([postgres?.stop(), redis?.stop()]);
});

/** Tells interrupt.test.ts that every server is up, then runs until the run is interrupted. */
it('runs until interrupted', async () => {
  writeFileSync(process.env['BATON_INTERRUPT_READY']!, String(process.pid));
  await new Promise((resolve) => setTimeout(resolve, 300_000));
});

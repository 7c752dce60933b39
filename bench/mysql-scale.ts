import type { Context } from './case.js';
import type { HeldFloor } from './held-floors.js';
import { mysqlClient, mysqlWithNamespace, serverQuestions } from './mysql.js';
import { scaleCase, SESSION_TIMEOUT_MS, type Setup } from './scale.js';
import type { FloorEntry, FloorQueue } from './scale-floors.js';

/** The floor's statements, each sent on its own (mysql2 without multi-statements, as baton runs it). */
const FLOOR_SCHEMA = [
  'DROP TABLE IF EXISTS bench_floor',
  'CREATE TABLE bench_floor (id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(64) NOT NULL, KEY floor_queue (queue, id)) ENGINE=InnoDB',
  'DROP PROCEDURE IF EXISTS bench_floor_enqueue',
  // The entry, its wake-up name (held by the enqueuing connection until the release), and the id just ahead (an index probe).
  `CREATE PROCEDURE bench_floor_enqueue(IN p_queue VARCHAR(64))
BEGIN
  DECLARE v_id BIGINT;
  INSERT INTO bench_floor (queue) VALUES (p_queue);
  SET v_id = LAST_INSERT_ID();
  DO GET_LOCK(CONCAT('bench.floor.', v_id), 0);
  SELECT v_id AS id, (SELECT MAX(f.id) FROM bench_floor f WHERE f.queue = p_queue AND f.id < v_id) AS ahead;
END`,
  'DROP PROCEDURE IF EXISTS bench_floor_release',
  // The delete commits (autocommit) before the name is given up: a waiter woken by it finds the entry gone.
  `CREATE PROCEDURE bench_floor_release(IN p_id BIGINT)
BEGIN
  DELETE FROM bench_floor WHERE id = p_id;
  DO RELEASE_LOCK(CONCAT('bench.floor.', p_id));
END`,
];

/**
 * MySQL's raw queue: one CALL enqueues (the row, its `GET_LOCK` name and the id just ahead), one CALL
 * releases (the delete, then the name). All entries are made on one connection, one after another, so
 * they come back in queue order; one more connection waits on the names in that order, each wait a
 * single `SELECT GET_LOCK(name), RELEASE_LOCK(name)` that returns once the entry ahead is released.
 */
export async function mysqlFloor(url: string, queue: string): Promise<FloorQueue> {
  const main = await mysqlClient(url);
  const waiter = await mysqlClient(url);
  for (const statement of FLOOR_SCHEMA) await main.query(statement);
  let waits: Promise<unknown> = Promise.resolve();
  const turnAfter = (ahead: string): Promise<void> => {
    const name = `bench.floor.${ahead}`;
    const turn = waits.then(() => waiter.query('SELECT GET_LOCK(?, 3600), RELEASE_LOCK(?)', [name, name]));
    waits = turn.catch(() => undefined);
    const result = turn.then(() => undefined);
    // A run that gave up (its bound passed) closes the connections under waits nobody awaits any more.
    void result.catch(() => undefined);
    return result;
  };
  const floor = {
    requests: 0,
    async enqueue(): Promise<FloorEntry> {
      floor.requests += 1;
      const [sets] = await main.query('CALL bench_floor_enqueue(?)', [queue]);
      const { id, ahead } = (sets as { id: string; ahead: string | null }[][])[0]![0]!;
      if (ahead !== null) floor.requests += 1;
      return {
        turn: ahead === null ? Promise.resolve() : turnAfter(ahead),
        release: async () => {
          floor.requests += 1;
          await main.query('CALL bench_floor_release(?)', [id]);
        },
      };
    },
    close: async () => {
      await main.query('DROP TABLE IF EXISTS bench_floor').catch(() => undefined);
      await Promise.all([main.end(), waiter.end()]);
    },
  };
  return floor;
}

/** MySQL: one INSERT per lock into a table keyed by (lock, id) and the lock's first id, on one connection. */
export function mysqlHeldFloor(url: string): HeldFloor {
  return async (n) => {
    const client = await mysqlClient(url);
    await client.query('DROP TABLE IF EXISTS bench_held_floor');
    await client.query(
      'CREATE TABLE bench_held_floor (name VARCHAR(64) NOT NULL, id BIGINT NOT NULL AUTO_INCREMENT, PRIMARY KEY (name, id), KEY (id)) ENGINE=InnoDB',
    );
    await client.query('DROP PROCEDURE IF EXISTS bench_held_take');
    await client.query(`CREATE PROCEDURE bench_held_take(IN p_name VARCHAR(64))
BEGIN
  INSERT INTO bench_held_floor (name) VALUES (p_name);
  SELECT MIN(id) AS first FROM bench_held_floor WHERE name = p_name;
END`);
    for (let i = 0; i < n; i += 1) await client.query('CALL bench_held_take(?)', [String(i)]);
    return {
      close: async () => {
        await client.query('DROP TABLE IF EXISTS bench_held_floor');
        await client.end();
      },
    };
  };
}

async function mysqlSetup(context: Context): Promise<Setup> {
  const url = await context.mysql();
  const admin = await mysqlClient(url);
  const requests = serverQuestions(admin);
  return {
    url: mysqlWithNamespace(url, 'bench'),
    options: { sessionTimeoutMs: SESSION_TIMEOUT_MS },
    batonRequests: requests,
    openFloor: async (n) => ({ floor: await mysqlFloor(url, `scale-${n}`), requests }),
    counted: "statements the server received (Questions), heartbeats and the wait pools' GET_LOCKs included",
    idleRequests: requests,
    heldFloor: mysqlHeldFloor(url),
    serverPid: context.serverPid('mysql'),
    close: () => admin.end(),
  };
}

export const mysqlScale = scaleCase('mysql.scale', 'MySQL', mysqlSetup);

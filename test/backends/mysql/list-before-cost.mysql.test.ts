import { connect } from 'baton-locks/testing';
import type mysql2 from 'mysql2/promise';
import { describe, expect, it } from 'vitest';

import { mysqlUrl, withMysql } from '../../harness/backends/mysql.js';

/** The handler reads (index and row lookups of every kind) this connection made so far. */
async function handlerReads(connection: mysql2.Connection): Promise<number> {
  const [rows] = await connection.query("SHOW SESSION STATUS LIKE 'Handler_read%'");
  return (rows as { Value: string }[]).reduce((sum, row) => sum + Number(row.Value), 0);
}

/**
 * The server's own count of the rows and index entries a statement reads (`Handler_read_%`), for the
 * short read against a whole listing: EXPLAIN's estimates alone chose a plan that walked the queue's tail.
 */
describe('MySQL: the cost of baton_list_before', () => {
  it('does not grow with the entries queued behind ours, nor with expired sessions elsewhere', async () => {
    // Made by connect(): the schema, its procedure included.
    await (await connect(`${mysqlUrl()}?namespace=cost-setup`, { sessionTimeoutMs: 2_000 })).close();
    const namespace = `cost-${process.pid}`;
    await withMysql(mysqlUrl(), async (connection) => {
      await connection.query(
        "INSERT INTO baton_sessions (ttl_ms, expires_at, created_at, client) VALUES (60000, SYSDATE(6) + INTERVAL 1 MINUTE, SYSDATE(6), 'cost')",
      );
      const [[{ id }]] = (await connection.query('SELECT LAST_INSERT_ID() AS id')) as unknown as [[{ id: string }]];
      const fill = async (queue: string, count: number): Promise<void> => {
        const rows = Array.from({ length: count }, (_, i) => [
          `c${id}.${queue}.${i}`,
          i + 1,
          namespace,
          queue,
          i + 1,
          'exclusive',
          id,
          '',
          new Date(),
        ]);
        for (let at = 0; at < rows.length; at += 1_000)
          await connection.query(
            'INSERT INTO baton_entries (`key`, token, namespace, queue, position, kind, session, data, created_at) VALUES ?',
            [rows.slice(at, at + 1_000)],
          );
      };
      try {
        await fill('short', 10);
        await fill('long', 5_000);
        const cost = async (text: string, values: unknown[]): Promise<number> => {
          const before = await handlerReads(connection);
          await connection.query(text, values);
          return (await handlerReads(connection)) - before;
        };
        const shortRead = (queue: string, at: number): Promise<number> =>
          cost('CALL baton_list_before(?, ?, ?, 1)', [namespace, queue, `c${id}.${queue}.${at}`]);
        // Expired sessions elsewhere in the database, not yet swept: none of them in this queue.
        await connection.query(
          "INSERT INTO baton_sessions (ttl_ms, expires_at, created_at, client) SELECT 1, SYSDATE(6) - INTERVAL 1 MINUTE, SYSDATE(6), 'cost-expired' FROM baton_entries WHERE namespace = ? AND queue = 'long' LIMIT 500",
          [namespace],
        );
        const near = await shortRead('short', 4);
        // 4,995 entries behind ours, then 3,999 ahead: the index range read stops at the window.
        const behind = await shortRead('long', 4);
        const ahead = await shortRead('long', 3_999);
        const whole = await cost('CALL baton_list(?, ?)', [namespace, 'long']);
        expect(near).toBeLessThan(100);
        expect(behind).toBeLessThanOrEqual(near + 4);
        expect(ahead).toBeLessThanOrEqual(near + 4);
        expect(whole).toBeGreaterThan(5_000);
      } finally {
        await connection.query("DELETE FROM baton_sessions WHERE id = ? OR client = 'cost-expired'", [id]);
      }
    });
  }, 60_000);
});

import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BackendError } from '../../../recipes/errors.js';
import { connect } from '../../../src/connect.js';
import { withMysql } from '../../harness/backends/mysql.js';
import { type MysqlServer, startMysql } from '../../harness/servers/mysql.js';

/**
 * A MariaDB of the file's own with the binary log on in STATEMENT format: replicas would run baton's
 * statements again with their own clocks, so connect() refuses it, saying why and what to set. The
 * same server once switched to ROW is accepted (new connections take the global format).
 */
describe('MariaDB with log_bin=ON and binlog_format=STATEMENT', () => {
  let server: MysqlServer | undefined;
  beforeAll(async () => {
    server = await startMysql({ serverArgs: ['--log-bin', '--binlog-format=STATEMENT'] });
  }, 240_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('is refused by connect() with a BackendError naming the format and the fix; ROW is accepted', async () => {
    const url = `${server!.url}?namespace=binlog`;
    const refused = await connect(url, { sessionTimeoutMs: 2_000 }).then(
      async (session) => {
        await session.close();
        return undefined;
      },
      (error: unknown) => error,
    );
    expect(refused).toBeInstanceOf(BackendError);
    expect((refused as Error).message).toMatch(/binlog_format=STATEMENT.*binlog_format=ROW.*MIXED/);
    expect((refused as Error).message).not.toContain('baton-test-password');
    await withMysql(server!.url, (connection) => connection.query("SET GLOBAL binlog_format = 'ROW'"));
    const session = await connect(url, { sessionTimeoutMs: 2_000 });
    await session.close();
  });
});

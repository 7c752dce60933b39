import { describe, expect, it } from 'vitest';

import { flavourOf, type ServerFacts, serverRefusal } from '../../src/backends/mysql/server-checks.js';

/** MariaDB 10.11 as Debian ships it: the binary log off, Galera's switch present and off. */
const MARIADB: ServerFacts = {
  version: '10.11.6-MariaDB-0+deb12u1',
  version_comment: 'Debian 12',
  wsrep_on: 'OFF',
  log_bin: 'OFF',
  sql_log_bin: 'ON',
  binlog_format: 'MIXED',
};
/** MySQL 8.4: the binary log on, ROW, no wsrep_on variable at all. */
const MYSQL: ServerFacts = {
  version: '8.4.3',
  version_comment: 'MySQL Community Server - GPL',
  log_bin: 'ON',
  sql_log_bin: 'ON',
  binlog_format: 'ROW',
};

describe('MySQL: the server checks at connect', () => {
  it.each([
    ['MariaDB by its version', MARIADB, 'mariadb'],
    [
      'MariaDB by its comment only',
      { version: '10.6.18', version_comment: 'mariadb.org binary distribution' },
      'mariadb',
    ],
    ['MySQL 8.4', MYSQL, 'mysql'],
    ['Percona Server (MySQL)', { version: '8.0.36-28', version_comment: 'Percona Server (GPL), Release 28' }, 'mysql'],
    ['a server that says nothing', {}, 'mysql'],
  ] as const)('reads the flavour of %s', (_what, facts, flavour) => {
    expect(flavourOf(facts)).toBe(flavour);
  });

  it.each([
    ['MariaDB without the binary log', MARIADB],
    ['MySQL 8 with ROW', MYSQL],
    ['MIXED with the binary log on', { ...MARIADB, log_bin: 'ON', binlog_format: 'MIXED' }],
    ['STATEMENT with the binary log off', { ...MARIADB, log_bin: 'OFF', binlog_format: 'STATEMENT' }],
    ["STATEMENT with this session's logging off", { ...MYSQL, binlog_format: 'STATEMENT', sql_log_bin: 'OFF' }],
    ['a server without the variables', {}],
  ] as const)('accepts %s', (_what, facts) => {
    expect(serverRefusal(facts)).toBeUndefined();
  });

  it.each([
    [
      'STATEMENT with the binary log on (MySQL)',
      { ...MYSQL, binlog_format: 'STATEMENT' },
      /binlog_format=STATEMENT.*ROW.*MIXED/,
    ],
    ['statement in lower case, log_bin 1', { ...MARIADB, log_bin: '1', binlog_format: 'statement' }, /SYSDATE/],
    ['a Galera node', { ...MARIADB, wsrep_on: 'ON' }, /Galera cluster node \(wsrep_on=ON\)/],
    [
      'a Galera node that also logs statements',
      { ...MARIADB, wsrep_on: 'ON', log_bin: 'ON', binlog_format: 'STATEMENT' },
      /Galera/,
    ],
  ] as const)('refuses %s, saying why and what to do', (_what, facts, says) => {
    expect(serverRefusal(facts)).toMatch(says);
  });
});

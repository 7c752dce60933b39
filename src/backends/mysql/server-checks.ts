import type { Link } from './link.js';

/** Which server answers: MySQL's and MariaDB's `GET_LOCK` read their timeout differently. */
export type ServerFlavour = 'mysql' | 'mariadb';

/** What `connect()` reads of the server (its session's values of these variables), each absent where the server has none. */
export interface ServerFacts {
  readonly version?: string;
  readonly version_comment?: string;
  /** Galera's switch (MariaDB has the variable, off, without Galera; MySQL has none). */
  readonly wsrep_on?: string;
  readonly log_bin?: string;
  /** Whether this session's statements go to the binary log (a session may turn it off). */
  readonly sql_log_bin?: string;
  readonly binlog_format?: string;
}

const VARIABLES = ['version', 'version_comment', 'wsrep_on', 'log_bin', 'sql_log_bin', 'binlog_format'];

/** Reads the facts in one statement: `SHOW VARIABLES` lists only the variables the server has (no error for MySQL's missing `wsrep_on`). */
export async function readServerFacts(main: Link): Promise<ServerFacts> {
  const rows = await main.rows<{ Variable_name: string; Value: string | null }>(
    `SHOW VARIABLES WHERE Variable_name IN (${VARIABLES.map(() => '?').join(', ')})`,
    VARIABLES,
  );
  return Object.fromEntries(rows.map((row) => [row.Variable_name.toLowerCase(), String(row.Value ?? '')]));
}

/** MariaDB says so in its version (`10.11.6-MariaDB-0+deb12u1`) or its comment; anything else is read as MySQL. */
export function flavourOf(facts: ServerFacts): ServerFlavour {
  return /mariadb/i.test(`${facts.version ?? ''} ${facts.version_comment ?? ''}`) ? 'mariadb' : 'mysql';
}

const on = (value: string | undefined): boolean => value !== undefined && /^(on|1)$/i.test(value);

/**
 * Why baton must not run on this server, or undefined. Galera (MariaDB Galera Cluster, Percona XtraDB
 * Cluster) replicates rows but not `GET_LOCK` names, and certifies conflicting writes at commit on
 * another node: the queue's order is not kept there. With the binary log on and `binlog_format=STATEMENT`,
 * replicas run baton's statements again with their own `SYSDATE(6)` (and `LAST_INSERT_ID(GREATEST(...))`
 * of their own clock), so their leases and tokens differ from the primary's: a failover would hand out
 * locks the primary never granted. ROW and MIXED (which logs such statements as rows) keep them equal.
 */
export function serverRefusal(facts: ServerFacts): string | undefined {
  if (on(facts.wsrep_on))
    return "is a Galera cluster node (wsrep_on=ON): baton does not run on Galera, whose nodes neither share GET_LOCK names nor keep the queue's commit order";
  const logged = on(facts.log_bin) && (facts.sql_log_bin === undefined || on(facts.sql_log_bin));
  if (logged && facts.binlog_format?.toUpperCase() === 'STATEMENT')
    return "logs statements (log_bin=ON, binlog_format=STATEMENT): replicas would compute baton's leases and fencing tokens again from their own clocks (SYSDATE) and diverge from the primary; set binlog_format=ROW (MySQL 8's default) or MIXED (MariaDB's) on the server";
  return undefined;
}

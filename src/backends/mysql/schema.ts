/**
 * baton's tables and procedures in the URL's database, every name starting with `baton_`. Each
 * statement is sent on its own (no multi-statement queries); `baton schema <url> --print` gives them
 * with `DELIMITER` lines, as the `mysql`/`mariadb` client needs for procedure bodies.
 *
 * - `baton_sessions`: one row per session, a lease whose expiry only the server's clock decides
 *   (`SYSDATE(6)`, the time of the call, not `NOW()`, which a statement or routine freezes at its start).
 *   A renewal of an expired row changes nothing, so an expired session never comes back.
 * - `baton_counters`: one row per queue, its counter, taken with `LAST_INSERT_ID(expr)` in the enqueue's
 *   transaction (never AUTO_INCREMENT, allocated before commit order is known and reusable after a
 *   crash). The row lock serialises the enqueues of one queue until their commit; each value is the larger
 *   of the next one and the server's clock in microseconds, so a counter row lost or removed gives no
 *   token twice. The token is the entry's order and fencing token (unless it took another's place).
 * - `baton_entries`: one row per queue entry, removed with its session (ON DELETE CASCADE). Its primary
 *   key is the entry's key (`s<session id>.<n>`, unique in the database since session ids are); a token
 *   is unique only within its queue (each queue has its own counter, so two queues' enqueues in the same
 *   microsecond get the same token), hence the unique key (namespace, queue, token) and no lookup by
 *   token alone.
 * - `baton_retired`: keys withdrawn after an enqueue sent more than once, so a late copy makes nothing.
 * - `baton_guarded_values`: values a holder writes only while its entry and lease are alive.
 * - `baton_enqueue` runs at READ COMMITTED in a transaction of its own: it takes the entry's wake-up
 *   name (`GET_LOCK`, a hint to waiters, held by the calling connection until the withdraw), the queue's
 *   counter row lock, inserts, and reads the queue in a fresh snapshot that shows every enqueue that
 *   held the row lock before it. Any error rolls the transaction back before it reaches the client.
 */

/** The version of the schema this code needs; `connect()` creates it, or refuses another. */
export const SCHEMA_VERSION = 2;

/**
 * The character sets of the procedures' string parameters and variables, as their columns have them.
 * Undeclared, they would take the database's default at creation (latin1 on many servers): a value
 * outside it refused or mangled, and a comparison with an `ascii_bin` column made in the parameter's
 * collation, case-insensitive and without the column's index.
 */
const UTF8_SET = 'CHARACTER SET utf8mb4 COLLATE utf8mb4_bin';
const ascii = (length: number): string => `VARCHAR(${length}) CHARACTER SET ascii COLLATE ascii_bin`;

const GONE = `SIGNAL SQLSTATE 'BT001' SET MESSAGE_TEXT = 'baton: session gone (its lease expired or it was closed)', MYSQL_ERRNO = 59001`;

const TABLES = [
  `CREATE TABLE IF NOT EXISTS baton_sessions (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  ttl_ms BIGINT NOT NULL,
  expires_at DATETIME(6) NOT NULL,
  created_at DATETIME(6) NOT NULL,
  client VARCHAR(255) NOT NULL DEFAULT '',
  KEY sessions_expiry (expires_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`,
  `CREATE TABLE IF NOT EXISTS baton_counters (
  namespace VARCHAR(255) NOT NULL,
  queue VARCHAR(512) NOT NULL,
  n BIGINT NOT NULL,
  PRIMARY KEY (namespace, queue)
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin`,
  `CREATE TABLE IF NOT EXISTS baton_entries (
  \`key\` VARCHAR(64) NOT NULL PRIMARY KEY,
  token BIGINT NOT NULL,
  namespace VARCHAR(255) NOT NULL,
  queue VARCHAR(512) NOT NULL,
  position BIGINT NOT NULL,
  kind VARCHAR(64) NOT NULL,
  session BIGINT NOT NULL,
  data TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  created_at DATETIME(6) NOT NULL,
  UNIQUE KEY entries_token (namespace, queue, token),
  KEY entries_queue (namespace, queue, position, token),
  KEY entries_session (session),
  CONSTRAINT entries_session FOREIGN KEY (session) REFERENCES baton_sessions (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin`,
  `CREATE TABLE IF NOT EXISTS baton_retired (
  \`key\` VARCHAR(64) NOT NULL PRIMARY KEY,
  session BIGINT NOT NULL,
  KEY retired_session (session),
  CONSTRAINT retired_session FOREIGN KEY (session) REFERENCES baton_sessions (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin`,
  `CREATE TABLE IF NOT EXISTS baton_guarded_values (
  namespace VARCHAR(255) NOT NULL,
  queue VARCHAR(512) NOT NULL,
  name VARCHAR(128) NOT NULL,
  value MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
  updated_at DATETIME(6) NOT NULL,
  PRIMARY KEY (namespace, queue, name)
) ENGINE=InnoDB DEFAULT CHARSET=ascii COLLATE=ascii_bin`,
  `CREATE TABLE IF NOT EXISTS baton_version (
  version INT NOT NULL PRIMARY KEY
) ENGINE=InnoDB`,
];

/**
 * Removes the expired sessions with entries in one queue (their entries go with them). One instant,
 * `v_now`, for the sweep and the listing after it: an entry is left out of a listing only if the sweep
 * deleted it, and the sweep's DELETE waits for the row locks a guarded write holds (FOR SHARE), so no
 * waiter is granted past an entry whose holder's guarded write is still open.
 */
const SWEEP = `DELETE FROM baton_sessions WHERE expires_at <= v_now
    AND id IN (SELECT e.session FROM baton_entries e WHERE e.namespace = p_namespace AND e.queue = p_queue)`;

/** The live entries of one queue in order. */
const LISTING = `SELECT e.token, e.\`key\`, e.position AS queue_position, e.kind FROM baton_entries e
    JOIN baton_sessions o ON o.id = e.session AND o.expires_at > v_now
    WHERE e.namespace = p_namespace AND e.queue = p_queue ORDER BY e.position, e.token`;

/** The short read's procedure (list-before.ts): added to a schema of this version where it is missing. */
export const LIST_BEFORE_PROCEDURE = 'baton_list_before';

/**
 * The entries nearest ahead of `v_position` in one queue, nearest first, at most `v_window` of them,
 * whatever their sessions' leases (the sweep and the listing below filter them). A backward range of the
 * `entries_queue` index from our position, so what is queued behind is never read. The index is forced:
 * without it, MariaDB 10.11 takes a `ref` on (namespace, queue) when most of the queue is ahead, read
 * backwards from the queue's tail, which walks every entry behind ours first (EXPLAIN: type ref,
 * 1,003 rows read for 1,000 behind; forced: type range, 2 rows).
 */
const WINDOW = `SELECT e.token, e.\`key\`, e.position, e.kind, e.session FROM baton_entries e FORCE INDEX (entries_queue)
      WHERE e.namespace = p_namespace AND e.queue = p_queue AND e.position < v_position
      ORDER BY e.position DESC, e.token DESC LIMIT v_window`;

/**
 * `baton_list_before`: our entry (by key, first, flagged `is_self`) and the entries just ahead of it, as
 * `baton_list` would show them, without reading the queue behind it. The sweep is `baton_list`'s, bounded
 * to the window: the expired sessions among the nearest entries are removed (waiting, as there, for an open
 * guarded write's row locks) until the window holds none, so an entry ahead is left out only once deleted.
 * A window row whose lease ran out after that sweep (a release ahead shifted the window meanwhile) is sent
 * with `live` 0: the client then lists the queue whole, whose sweep removes it. READ COMMITTED, in a
 * transaction of its own, as `baton_enqueue`: its reads take no gap locks that would hold up enqueues.
 */
const LIST_BEFORE = `CREATE PROCEDURE ${LIST_BEFORE_PROCEDURE}(IN p_namespace ${ascii(255)}, IN p_queue ${ascii(512)},
  IN p_key ${ascii(64)}, IN p_limit BIGINT)
BEGIN
  DECLARE v_now DATETIME(6) DEFAULT SYSDATE(6);
  DECLARE v_position BIGINT DEFAULT NULL;
  DECLARE v_window BIGINT DEFAULT COALESCE(p_limit + 1, 9223372036854775807);
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  SELECT e.position INTO v_position FROM baton_entries e
    JOIN baton_sessions o ON o.id = e.session AND o.expires_at > v_now
    WHERE e.\`key\` = p_key AND e.namespace = p_namespace AND e.queue = p_queue;
  sweep: LOOP
    IF v_position IS NULL THEN LEAVE sweep; END IF;
    -- A join, not baton_list's IN (subquery): a single-table DELETE runs that subquery for every
    -- expired session of the database (MariaDB does no semi-join there), this one only the window.
    DELETE o FROM baton_sessions o JOIN (${WINDOW}) w ON o.id = w.session WHERE o.expires_at <= v_now;
    IF ROW_COUNT() = 0 THEN LEAVE sweep; END IF;
  END LOOP;
  SELECT l.token, l.\`key\`, l.queue_position, l.kind, l.live, l.is_self FROM (
    SELECT e.token, e.\`key\`, e.position AS queue_position, e.kind, 1 AS live, 1 AS is_self FROM baton_entries e
      JOIN baton_sessions o ON o.id = e.session AND o.expires_at > v_now
      WHERE e.\`key\` = p_key AND e.namespace = p_namespace AND e.queue = p_queue
    UNION ALL
    SELECT w.token, w.\`key\`, w.position, w.kind, COALESCE(o.expires_at > v_now, 0), 0 AS is_self FROM (${WINDOW}) w
      LEFT JOIN baton_sessions o ON o.id = w.session
  ) l ORDER BY l.is_self DESC, l.queue_position DESC, l.token DESC;
  COMMIT;
END`;

const PROCEDURES: readonly (readonly [string, string])[] = [
  [
    'baton_open_session',
    `CREATE PROCEDURE baton_open_session(IN p_ttl_ms BIGINT, IN p_client VARCHAR(255) ${UTF8_SET})
BEGIN
  -- Housekeeping of sessions nobody listed since their lease ran out: given up on a lock conflict.
  BEGIN
    DECLARE CONTINUE HANDLER FOR 1205, 1213 BEGIN END;
    DELETE FROM baton_sessions WHERE expires_at <= SYSDATE(6) LIMIT 100;
  END;
  INSERT INTO baton_sessions (ttl_ms, expires_at, created_at, client)
    VALUES (p_ttl_ms, SYSDATE(6) + INTERVAL (p_ttl_ms * 1000) MICROSECOND, SYSDATE(6), p_client);
  SELECT LAST_INSERT_ID() AS id;
END`,
  ],
  [
    'baton_list',
    `CREATE PROCEDURE baton_list(IN p_namespace ${ascii(255)}, IN p_queue ${ascii(512)})
BEGIN
  DECLARE v_now DATETIME(6) DEFAULT SYSDATE(6);
  ${SWEEP};
  ${LISTING};
END`,
  ],
  [LIST_BEFORE_PROCEDURE, LIST_BEFORE],
  [
    'baton_enqueue',
    `CREATE PROCEDURE baton_enqueue(IN p_session BIGINT, IN p_key ${ascii(64)}, IN p_name ${ascii(64)},
  IN p_namespace ${ascii(255)}, IN p_queue ${ascii(512)}, IN p_kind ${ascii(64)}, IN p_at BIGINT,
  IN p_data TEXT ${UTF8_SET})
BEGIN
  DECLARE v_token BIGINT;
  DECLARE v_created INT DEFAULT 0;
  DECLARE v_armed INT DEFAULT 0;
  DECLARE v_took INT DEFAULT 0;
  DECLARE v_now DATETIME(6);
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN
    ROLLBACK;
    IF v_took = 1 THEN DO RELEASE_LOCK(p_name); END IF;
    RESIGNAL;
  END;
  -- The wake-up name first, so that a waiter who sees the entry finds the name held.
  SET v_armed = COALESCE(IS_USED_LOCK(p_name) = CONNECTION_ID(), 0);
  IF v_armed = 0 THEN
    SET v_armed = COALESCE(GET_LOCK(p_name, 0), 0);
    SET v_took = v_armed;
  END IF;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  IF NOT EXISTS (SELECT 1 FROM baton_sessions WHERE id = p_session AND expires_at > SYSDATE(6)) THEN ${GONE}; END IF;
  INSERT INTO baton_counters (namespace, queue, n)
    VALUES (p_namespace, p_queue, LAST_INSERT_ID(CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED)))
    ON DUPLICATE KEY UPDATE n = LAST_INSERT_ID(GREATEST(n + 1, CAST(UNIX_TIMESTAMP(SYSDATE(6)) * 1000000 AS SIGNED)));
  -- Checked after the counter's row lock: the lease may have run out while it waited for it.
  IF NOT EXISTS (SELECT 1 FROM baton_sessions WHERE id = p_session AND expires_at > SYSDATE(6)) THEN ${GONE}; END IF;
  IF NOT EXISTS (SELECT 1 FROM baton_entries WHERE \`key\` = p_key)
     AND NOT EXISTS (SELECT 1 FROM baton_retired WHERE \`key\` = p_key) THEN
    SET v_token = LAST_INSERT_ID();
    INSERT INTO baton_entries (token, \`key\`, namespace, queue, position, kind, session, data, created_at)
      VALUES (v_token, p_key, p_namespace, p_queue, COALESCE(p_at, v_token), p_kind, p_session, p_data, SYSDATE(6));
    SET v_created = 1;
  END IF;
  SET v_now = SYSDATE(6);
  ${SWEEP};
  SELECT l.*, v_created AS created, v_armed AS armed FROM (${LISTING}) l ORDER BY l.queue_position, l.token;
  IF NOT EXISTS (SELECT 1 FROM baton_sessions WHERE id = p_session AND expires_at > SYSDATE(6)) THEN ${GONE}; END IF;
  COMMIT;
END`,
  ],
  [
    'baton_withdraw',
    `CREATE PROCEDURE baton_withdraw(IN p_key ${ascii(64)}, IN p_session BIGINT, IN p_name ${ascii(64)}, IN p_retire INT)
BEGIN
  DELETE FROM baton_entries WHERE \`key\` = p_key AND session = p_session;
  IF p_retire = 1 THEN
    INSERT IGNORE INTO baton_retired (\`key\`, session) SELECT p_key, o.id FROM baton_sessions o WHERE o.id = p_session;
  END IF;
  -- After the delete's commit: a waiter woken by the release finds the entry gone.
  DO RELEASE_LOCK(p_name);
END`,
  ],
  [
    'baton_guarded_write',
    `CREATE PROCEDURE baton_guarded_write(IN p_key ${ascii(64)}, IN p_session BIGINT, IN p_name ${ascii(128)},
  IN p_value MEDIUMTEXT ${UTF8_SET}, IN p_delete INT)
BEGIN
  DECLARE v_namespace ${ascii(255)} DEFAULT NULL;
  DECLARE v_queue ${ascii(512)} DEFAULT NULL;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; RESIGNAL; END;
  SET TRANSACTION ISOLATION LEVEL READ COMMITTED;
  START TRANSACTION;
  -- The entry and session rows locked FOR SHARE until COMMIT: the sweep that would remove the entry
  -- (and so any grant past it) waits for this write.
  SELECT e.namespace, e.queue INTO v_namespace, v_queue FROM baton_entries e
    JOIN baton_sessions o ON o.id = e.session AND o.expires_at > SYSDATE(6)
    WHERE e.\`key\` = p_key AND e.session = p_session LOCK IN SHARE MODE;
  IF v_namespace IS NOT NULL AND p_delete = 1 THEN
    DELETE FROM baton_guarded_values WHERE namespace = v_namespace AND queue = v_queue AND name = p_name;
  ELSEIF v_namespace IS NOT NULL THEN
    INSERT INTO baton_guarded_values (namespace, queue, name, value, updated_at)
      VALUES (v_namespace, v_queue, p_name, p_value, SYSDATE(6))
      ON DUPLICATE KEY UPDATE value = p_value, updated_at = SYSDATE(6);
  END IF;
  COMMIT;
  SELECT v_namespace IS NOT NULL AS held;
END`,
  ],
];

/**
 * The procedure a schema of this version may lack (made by an older client of the same version, which
 * never drops it): added on its own, without a version change, so that older and newer clients keep
 * sharing the schema (docs/mysql.md, "Rolling deploys").
 */
export function listBeforeStatement(): string {
  return LIST_BEFORE;
}

/** The statements that create the schema of `SCHEMA_VERSION`, each sent on its own, in order. */
export function schemaStatements(): string[] {
  return [
    ...TABLES,
    ...PROCEDURES.flatMap(([name, body]) => [`DROP PROCEDURE IF EXISTS ${name}`, body]),
    'DELETE FROM baton_version',
    `INSERT INTO baton_version (version) VALUES (${SCHEMA_VERSION})`,
  ];
}

/** The same statements as a script for the `mysql`/`mariadb` client (`baton schema --print`). */
export function schemaScript(): string {
  return `DELIMITER //\n${schemaStatements()
    .map((statement) => `${statement}//\n`)
    .join('\n')}DELIMITER ;\n`;
}

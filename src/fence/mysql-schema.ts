/**
 * The fence's SQL for MySQL 8 and MariaDB 10.6+: a table of high-water marks and two procedures in a
 * database the user writes to (by default the connection's own); it needs no baton backend there.
 * Each statement is sent on its own (mysql2's `multipleStatements` stays off); the printed script has
 * the `DELIMITER` lines the `mysql`/`mariadb` client needs for procedure bodies.
 *
 * - `baton_fence_marks`: one row per resource. The name is a VARBINARY of its UTF-8 bytes, compared
 *   byte for byte: case-sensitive, and without the trailing-space padding of MySQL's `_bin` collations,
 *   whatever the connection's character set.
 * - `baton_fence_advance(resource, token, wait_s)`: one `INSERT ... ON DUPLICATE KEY UPDATE` that
 *   raises the mark to the token when it is not below it, then a locking read of the mark. Both act on
 *   the latest committed row under its exclusive lock at READ COMMITTED and REPEATABLE READ alike (a
 *   locking read never reads the snapshot), and the lock is held until the transaction ends. A token
 *   below the mark, or any other error, rolls the transaction back and then raises (SQLSTATE `BF001`
 *   for a stale token), so a refused write leaves nothing behind.
 * - `baton_fence_begin(...)`: `START TRANSACTION` and the same body in one call (one round trip).
 *
 * A routine runs with the `sql_mode` it was created under, so the DDL pins one: a server's
 * `ANSI_QUOTES` or `NO_BACKSLASH_ESCAPES` changes nothing inside the fence.
 */

/** The SQLSTATE of a refused token (as on PostgreSQL): class `BF` is used by no MySQL error. */
export const MYSQL_STALE_TOKEN_SQLSTATE = 'BF001';

/** The `sql_mode` the fence's routines are created under (names valid on MySQL 8 and MariaDB). */
export const FENCE_SQL_MODE =
  'STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION';

/** A database name the fence accepts (it is always quoted with backticks). */
export const FENCE_DATABASE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** The resource column in bytes: room for 512 UTF-16 code units in UTF-8 (at most 1,536 bytes; an InnoDB key allows 3072). */
export const MAX_RESOURCE_BYTES = 2048;

/** `name` qualified by `database` (backtick-quoted), or bare: the connection's current database. */
export function qualified(database: string | undefined, name: string): string {
  return database === undefined ? name : `\`${database}\`.${name}`;
}

function marksTable(database: string | undefined): string {
  return `CREATE TABLE IF NOT EXISTS ${qualified(database, 'baton_fence_marks')} (
  resource   VARBINARY(${MAX_RESOURCE_BYTES}) NOT NULL PRIMARY KEY COMMENT 'the resource name as UTF-8 bytes',
  mark       BIGINT NOT NULL COMMENT 'the highest fencing token a committed write was made with',
  updated_at DATETIME(6) NOT NULL COMMENT 'UTC time the mark last moved',
  CONSTRAINT baton_fence_mark_not_negative CHECK (mark >= 0)
) ENGINE=InnoDB`;
}

/**
 * A procedure of the fence's body; `baton_fence_begin` starts the transaction first. The body is
 * written out in both (no nested CALL) and touches `innodb_lock_wait_timeout` only when a wait is
 * given: each statement of a routine costs server time on every fenced write.
 */
function fenceProcedure(database: string | undefined, name: string, comment: string, begin: boolean): string {
  return `CREATE PROCEDURE ${qualified(database, name)}(
  IN p_resource VARBINARY(${MAX_RESOURCE_BYTES}), IN p_token BIGINT, IN p_wait_s INT)
MODIFIES SQL DATA SQL SECURITY INVOKER
COMMENT '${comment}'
BEGIN
  DECLARE v_mark BIGINT;
  DECLARE v_message VARCHAR(128);
  DECLARE v_wait BIGINT DEFAULT NULL;
  DECLARE EXIT HANDLER FOR SQLEXCEPTION
  BEGIN
    IF v_wait IS NOT NULL THEN
      SET SESSION innodb_lock_wait_timeout = v_wait;
    END IF;
    ROLLBACK;
    RESIGNAL;
  END;
  IF p_resource IS NULL OR LENGTH(p_resource) = 0 OR p_token IS NULL OR p_token < 0 THEN
    SIGNAL SQLSTATE '22023' SET MESSAGE_TEXT = 'baton fence: give a resource and a token that is not negative';
  END IF;${begin ? '\n  START TRANSACTION;' : ''}
  IF p_wait_s IS NOT NULL THEN
    SET v_wait = @@SESSION.innodb_lock_wait_timeout;
    SET SESSION innodb_lock_wait_timeout = p_wait_s;
  END IF;
  INSERT INTO baton_fence_marks (resource, mark, updated_at) VALUES (p_resource, p_token, UTC_TIMESTAMP(6))
    ON DUPLICATE KEY UPDATE updated_at = IF(mark <= p_token, UTC_TIMESTAMP(6), updated_at),
                            mark = GREATEST(mark, p_token);
  IF v_wait IS NOT NULL THEN
    SET SESSION innodb_lock_wait_timeout = v_wait;
    SET v_wait = NULL;
  END IF;
  SELECT mark INTO v_mark FROM baton_fence_marks WHERE resource = p_resource FOR UPDATE;
  IF v_mark > p_token THEN
    SET v_message = CONCAT('baton fence: stale fencing token ', p_token, ', the mark is ', v_mark);
    SIGNAL SQLSTATE '${MYSQL_STALE_TOKEN_SQLSTATE}' SET MESSAGE_TEXT = v_message;
  END IF;
END`;
}

function advanceProcedure(database: string | undefined): string {
  return fenceProcedure(
    database,
    'baton_fence_advance',
    'baton-locks fence 1: raise the mark or roll back and raise BF001',
    false,
  );
}

function beginProcedure(database: string | undefined): string {
  return fenceProcedure(database, 'baton_fence_begin', 'baton-locks fence 1: START TRANSACTION, then the fence', true);
}

/** The routines, each with the statement that drops an older version first (for the printed script). */
export function fenceRoutines(database?: string): { name: string; create: string }[] {
  return [
    { name: qualified(database, 'baton_fence_advance'), create: advanceProcedure(database) },
    { name: qualified(database, 'baton_fence_begin'), create: beginProcedure(database) },
  ];
}

/** The table's DDL (idempotent). */
export function fenceTableSql(database?: string): string {
  return marksTable(database);
}

/**
 * The script a DBA applies once per database with the `mysql`/`mariadb` client (idempotent): the
 * sql_mode pinned for the routines and given back afterwards. DDL commits on its own in MySQL, so
 * this is no transaction: run it again if it was cut short.
 */
export function mysqlFenceSchemaScript(database?: string): string {
  const statements = [
    'SET @baton_fence_saved_mode = @@SESSION.sql_mode',
    `SET SESSION sql_mode = '${FENCE_SQL_MODE}'`,
    marksTable(database),
    ...fenceRoutines(database).flatMap(({ name, create }) => [`DROP PROCEDURE IF EXISTS ${name}`, create]),
    'SET SESSION sql_mode = @baton_fence_saved_mode',
  ];
  return `DELIMITER //\n${statements.map((statement) => `${statement}//\n`).join('')}DELIMITER ;\n`;
}

/**
 * The fence's SQL for PostgreSQL: a table of high-water marks and one function, in a schema of their
 * own (default `baton_fence`) in the database the user writes to; it needs no baton backend there.
 * Plain text, so that `baton fence-schema --print` gives a DBA exactly what `applyFenceSchema` runs.
 *
 * `<schema>.advance(resource, token)` is called inside the user's transaction, before or after the
 * business write. It raises SQLSTATE `BF001` when `token` is below the resource's mark, and otherwise
 * raises the mark to `token` (an equal token passes: the same holder writing again). The mark's row
 * stays locked until the transaction ends, so the write and the mark commit or roll back together and
 * a newer holder's fence waits for the older transaction to end.
 */

/** The SQLSTATE of a refused token: class `BF` (baton fence) is used by no PostgreSQL error. */
export const STALE_TOKEN_SQLSTATE = 'BF001';

/** The default schema of the fence's table and function. */
export const FENCE_SCHEMA = 'baton_fence';

/** A schema name the SQL can use unquoted. */
export const FENCE_SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

/** The DDL of the fence under `schema`: idempotent, for one transaction (the caller's). */
export function fenceSchemaSql(schema: string = FENCE_SCHEMA): string {
  const s = schema;
  return `CREATE SCHEMA IF NOT EXISTS ${s};

-- One row per fenced resource: the highest fencing token a committed write was made with.
CREATE TABLE IF NOT EXISTS ${s}.marks (
  resource   text        PRIMARY KEY CHECK (length(resource) BETWEEN 1 AND 512),
  mark       bigint      NOT NULL CHECK (mark >= 0),
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Call inside the transaction of the write it protects. Raises SQLSTATE ${STALE_TOKEN_SQLSTATE} (DETAIL: a JSON
-- object {"resource", "token", "mark"}, numbers as strings) when p_token < the mark; otherwise sets the
-- mark to p_token (an equal token passes) and returns it. The row lock is held until the transaction ends.
CREATE OR REPLACE FUNCTION ${s}.advance(p_resource text, p_token bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $fence$
DECLARE
  v_mark bigint;
BEGIN
  IF p_resource IS NULL OR p_token IS NULL OR p_token < 0 THEN
    RAISE EXCEPTION 'fence: resource and token must be given, the token not negative'
      USING ERRCODE = '22023';
  END IF;
  INSERT INTO ${s}.marks AS m (resource, mark) VALUES (p_resource, p_token)
    ON CONFLICT (resource) DO UPDATE SET mark = EXCLUDED.mark, updated_at = clock_timestamp()
    WHERE m.mark <= EXCLUDED.mark
    RETURNING m.mark INTO v_mark;
  IF FOUND THEN
    RETURN v_mark;
  END IF;
  -- Refused: ON CONFLICT locked the row even though its WHERE failed, so this reads the mark that won.
  SELECT m.mark INTO v_mark FROM ${s}.marks m WHERE m.resource = p_resource;
  RAISE EXCEPTION 'stale fencing token % for resource "%": its mark is %', p_token, p_resource, v_mark
    USING ERRCODE = '${STALE_TOKEN_SQLSTATE}',
          DETAIL = json_build_object('resource', p_resource, 'token', p_token::text, 'mark', v_mark::text)::text,
          HINT = 'the lock that issued this token was taken over by a newer holder';
END
$fence$;
`;
}

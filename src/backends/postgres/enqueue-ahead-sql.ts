/**
 * The SQL of the bounded enqueue (issue 37, `Backend.enqueueAhead`): `enqueue_ahead`, an enqueue at
 * the tail answered with what the first decision needs (our row, the entries just ahead, whether a
 * write or semaphore entry is among them, how many are ahead when asked), not the whole queue, and the
 * indexes of the entries that may later put one at their place. It builds on `put_entry`, the write
 * both enqueues share (schema.ts). Part of schema version 1 (`schemaSql` has them); a database made by
 * older code lacks them, and `open` adds them with `put_entry` (schema-additions.ts).
 */

/**
 * `entries_writes` and `entries_semaphores`: the entries that may later put one at their place
 * (decide.ts `moverOf`), one index per kind, so that whether one of a kind is ahead is one index
 * descent, not a walk of the queue or of the other kind's entries (a queue of 10,000 writers holds no
 * semaphore entry). The planner proves a query's `kind = 'write'` (or the same regular expression)
 * implies the index's predicate.
 */
export function moversIndexSql(s: string): string {
  return `CREATE INDEX IF NOT EXISTS entries_writes ON ${s}.entries (namespace, queue, position, token)
  WHERE kind = 'write';
CREATE INDEX IF NOT EXISTS entries_semaphores ON ${s}.entries (namespace, queue, position, token)
  WHERE kind ~ '^semaphore_[0-9]+_[0-9]+$';
`;
}

/**
 * `enqueue_ahead`: `put_entry` at the tail, then, in statements of their own (fresh snapshots, the lock
 * still held), our row and up to `p_page + 1` entries ahead as `list_before` reads them (expired
 * sessions in that window swept), whether a write or a semaphore entry is ahead (a probe of
 * `entries_writes` and one of `entries_semaphores`) and, if `p_count`, how many entries are ahead (null otherwise: the one read that
 * grows with the queue, which only a trace asks for). "Ahead" is by (position, token): for an entry
 * found rather than made (an earlier attempt made it), entries placed since at an older one's place are
 * ahead and seen, later ones behind. No row answered: the key was retired, nothing made (the caller
 * says so). The count and the probes may include entries of expired sessions: they only add movers
 * (more listing), never hide one.
 */
export function enqueueAheadSql(s: string): string {
  return `CREATE FUNCTION ${s}.enqueue_ahead(p_session bigint, p_key text, p_namespace text, p_queue text, p_kind text, p_data text, p_page integer, p_count boolean)
  RETURNS TABLE (token bigint, key text, queue_position bigint, kind text, is_self boolean, created boolean, ahead bigint, writes boolean, semaphores boolean)
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_created boolean;
  v_ours boolean;
  v_position bigint;
  v_token bigint;
  v_ahead bigint;
  v_writes boolean;
  v_semaphores boolean;
BEGIN
  v_created := ${s}.put_entry(p_session, p_key, p_namespace, p_queue, p_kind, NULL, p_data);
  -- By the key alone (its unique index), the rest checked on the row: with the queue's columns in the
  -- condition, a plan cached while the table was small scans the whole queue for the key.
  SELECT e.position, e.token, e.namespace = p_namespace AND e.queue = p_queue AND e.session = p_session
    INTO v_position, v_token, v_ours FROM ${s}.entries e WHERE e.key = p_key;
  IF FOUND AND v_ours THEN
    IF p_count THEN
      SELECT count(*) INTO v_ahead FROM ${s}.entries e
        WHERE e.namespace = p_namespace AND e.queue = p_queue AND (e.position, e.token) < (v_position, v_token);
    END IF;
    v_writes := EXISTS (SELECT 1 FROM ${s}.entries e
      WHERE e.namespace = p_namespace AND e.queue = p_queue AND (e.position, e.token) < (v_position, v_token)
        AND e.kind = 'write');
    v_semaphores := EXISTS (SELECT 1 FROM ${s}.entries e
      WHERE e.namespace = p_namespace AND e.queue = p_queue AND (e.position, e.token) < (v_position, v_token)
        AND e.kind ~ '^semaphore_[0-9]+_[0-9]+$');
    RETURN QUERY
      SELECT l.token, l.key, l.queue_position, l.kind, l.is_self, v_created, v_ahead, v_writes, v_semaphores
        FROM ${s}.list_before(p_namespace, p_queue, p_key, v_position, v_token, p_page) l;
  END IF;
  -- A lease that ran out meanwhile: list_before left our row out; the session is gone, not the entry.
  PERFORM 1 FROM ${s}.sessions WHERE id = p_session AND expires_at > clock_timestamp();
  IF NOT FOUND THEN
    RAISE EXCEPTION 'baton session % is gone (its lease expired or it was closed)', p_session USING ERRCODE = 'BT001';
  END IF;
END
$$;
`;
}

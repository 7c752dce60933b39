/**
 * The SQL of `list_before`, the short read at a wake (issue 37): the entries just ahead of a waiter's
 * own, nearest first, and whether its own entry is still there, in one statement whose cost does not
 * grow with the queue behind it. Part of schema version 1 (`schemaSql` ends with it); a database made
 * by older code lacks it, and `open` adds it (schema-additions.ts).
 *
 * It keeps the promises of `list` for the entries it reads: entries of expired sessions are never
 * answered, and every one of them it passes over is swept first (its session deleted, rows locked
 * FOR UPDATE in id order, so that two sweeps never deadlock and a renewal committed meanwhile is
 * seen). The answer is always one read of the window (the `p_limit + 1` rows nearest ahead) that held
 * no expired entry: a window that held some is swept and read again. An entry is thus left out only
 * once the sweep deleted it, and that delete waits for the row locks a guarded transaction holds on it
 * (FOR SHARE): no waiter is granted past an entry whose holder's guarded transaction is open. Entries
 * behind `self` are neither read nor swept: they cannot change its decision, and their own waiters'
 * reads sweep them.
 *
 * The window is an index probe of `entries_queue (namespace, queue, position, token)`: a row
 * comparison below `self`'s (position, token), read backwards, LIMIT. An entry placed at another's
 * position (a downgrade's read, an announced grant) sorts by that position, so it is read here even if
 * it was made after `self` (unlike etcd's create-revision order).
 *
 * Our own entry's row is read after the window (a later snapshot): if it is still there, the window's
 * absence of a blocker was real, since a session closed by the server deletes our entry and its own in
 * one transaction. It is the first row of the answer (`is_self`), the entries ahead follow.
 */
export function listBeforeSql(schema: string): string {
  const s = schema;
  return `CREATE FUNCTION ${s}.list_before(p_namespace text, p_queue text, p_key text, p_position bigint, p_token bigint, p_limit integer)
  RETURNS TABLE (token bigint, key text, queue_position bigint, kind text, is_self boolean)
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  -- One instant for the whole call, as in list: what counts as expired does not move between reads.
  v_now timestamptz := clock_timestamp();
  v_expired bigint[];
  v_tokens bigint[];
  v_keys text[];
  v_positions bigint[];
  v_kinds text[];
BEGIN
  LOOP
    -- The window: at most p_limit + 1 entries ahead (all of them when p_limit is null), nearest first.
    SELECT array_agg(w.session ORDER BY w.session) FILTER (WHERE o.expires_at <= v_now),
           array_agg(w.token ORDER BY w.position DESC, w.token DESC),
           array_agg(w.key ORDER BY w.position DESC, w.token DESC),
           array_agg(w.position ORDER BY w.position DESC, w.token DESC),
           array_agg(w.kind ORDER BY w.position DESC, w.token DESC)
      INTO v_expired, v_tokens, v_keys, v_positions, v_kinds
      FROM (SELECT e.token, e.key, e.position, e.kind, e.session FROM ${s}.entries e
             WHERE e.namespace = p_namespace AND e.queue = p_queue
               AND (e.position, e.token) < (p_position, p_token)
             ORDER BY e.position DESC, e.token DESC
             LIMIT p_limit + 1) w
      JOIN ${s}.sessions o ON o.id = w.session;
    EXIT WHEN v_expired IS NULL;
    -- Expired sessions in the window go (their entries with them; the trigger tells their waiters).
    -- Expiry is decided on the locked row: a session renewed since the read above stays, and is live
    -- in the next read.
    DELETE FROM ${s}.sessions WHERE id IN (
      SELECT o.id FROM ${s}.sessions o WHERE o.id = ANY (v_expired) AND o.expires_at <= v_now ORDER BY o.id FOR UPDATE OF o
    );
  END LOOP;
  -- Our row by its whole place in entries_queue: with only the queue's columns in that index's
  -- condition, a plan cached while the table was small scans the whole queue for the key.
  RETURN QUERY
    SELECT e.token, e.key, e.position, e.kind, true FROM ${s}.entries e
    JOIN ${s}.sessions o ON o.id = e.session AND o.expires_at > v_now
    WHERE e.namespace = p_namespace AND e.queue = p_queue AND e.position = p_position AND e.token = p_token
      AND e.key = p_key;
  RETURN QUERY
    SELECT a.token, a.key, a.position, a.kind, false
      FROM unnest(v_tokens, v_keys, v_positions, v_kinds) WITH ORDINALITY AS a (token, key, position, kind, n)
      ORDER BY a.n;
END
$$;
`;
}

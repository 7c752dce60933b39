/**
 * baton's tables and functions in a schema of their own (default `baton`). The SQL is plain text, so
 * that `baton schema <url> --print` gives a DBA exactly what `connect()` would run.
 *
 * - `sessions`: one row per session, a lease whose expiry only the server's clock decides. A renewal
 *   of an expired row changes nothing (`expires_at > clock_timestamp()` in its WHERE), so an expired
 *   session never comes back; its row and entries are removed by whoever finds them.
 * - `entries`: one row per queue entry. `token` comes from one sequence for the whole schema, seeded
 *   with the server's clock in microseconds: it is the entry's order and fencing token (unless the
 *   entry took another's place: then both are `position`, the other's), strictly increasing across
 *   holders, queues emptied and re-created, sessions, restarts, and the schema dropped and created again.
 * - `retired`: the keys withdrawn after an enqueue that was sent more than once, so that a late copy of
 *   an earlier attempt makes no entry again (an orphan nobody would withdraw); they go with their session.
 * - `observers`: the queues whose changes someone waits for (an election's `observe()` of an empty
 *   queue): an enqueue or a delete in them also notifies the queue's channel (`<schema>.q<md5 prefix>`),
 *   and only in them.
 * - The AFTER DELETE trigger notifies the channel named after the deleted entry (`<schema>.e<token>`):
 *   one release wakes only the waiters of that entry. NOTIFY is transactional: nobody is woken by an
 *   entry whose delete is rolled back.
 * - `enqueue` writes with `put_entry`, which serialises the enqueues of one queue (an advisory
 *   transaction lock on a hash of the queue), and reads the queue after its insert, in a fresh
 *   snapshot: under READ COMMITTED two concurrent enqueues could otherwise take their tokens in one
 *   order and commit in the other, and each could see itself at the head.
 * - `list_before` (list-before-sql.ts): the short read of a woken waiter, the entries just ahead of its own.
 * - `enqueue_ahead` and the indexes `entries_writes`, `entries_semaphores` (enqueue-ahead-sql.ts): the enqueue at the tail
 *   answered with a window of the queue, not all of it.
 */

import { enqueueAheadSql, moversIndexSql } from './enqueue-ahead-sql.js';
import { listBeforeSql } from './list-before-sql.js';

/** The version of the schema this code needs; `connect()` creates it, or refuses an older or newer one. */
export const SCHEMA_VERSION = 1;

/** The name of baton's schema: an unquoted identifier, short enough for the channel names built on it. */
export const SCHEMA_NAME = /^[a-z_][a-z0-9_]{0,39}$/;

/** The advisory lock class of baton's enqueues and of its schema creation (`'bato'` in ASCII). */
export const LOCK_CLASS = 0x6261746f;

/** The DDL that creates schema version 1 under `schema`, in one transaction (the caller's). */
export function schemaSql(schema: string): string {
  const s = schema;
  return `CREATE SCHEMA IF NOT EXISTS ${s};

CREATE TABLE ${s}.version (
  version integer NOT NULL
);
INSERT INTO ${s}.version (version) VALUES (${SCHEMA_VERSION});

CREATE TABLE ${s}.sessions (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  ttl interval NOT NULL,
  expires_at timestamptz NOT NULL,
  created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  client text NOT NULL DEFAULT ''
);

CREATE SEQUENCE ${s}.tokens AS bigint;
-- Seeded with the server's clock in microseconds: a schema dropped and created again goes on above the
-- tokens it gave before (unless they outran one per microsecond on average, or the clock went back).
SELECT setval('${s}.tokens', (extract(epoch FROM clock_timestamp()) * 1000000)::bigint);

CREATE TABLE ${s}.entries (
  token bigint PRIMARY KEY,
  key text NOT NULL UNIQUE,
  namespace text NOT NULL,
  queue text NOT NULL,
  position bigint NOT NULL,
  kind text NOT NULL,
  session bigint NOT NULL REFERENCES ${s}.sessions (id) ON DELETE CASCADE,
  data text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX entries_queue ON ${s}.entries (namespace, queue, position, token);
CREATE INDEX entries_session ON ${s}.entries (session);

-- Keys withdrawn after an enqueue that was sent more than once: a late copy of an earlier attempt (its
-- connection dropped, its bytes still on the way) must not make the entry again once it was withdrawn.
CREATE TABLE ${s}.retired (
  key text PRIMARY KEY,
  session bigint NOT NULL REFERENCES ${s}.sessions (id) ON DELETE CASCADE
);
CREATE INDEX retired_session ON ${s}.retired (session);

CREATE TABLE ${s}.observers (
  namespace text NOT NULL,
  queue text NOT NULL,
  session bigint NOT NULL REFERENCES ${s}.sessions (id) ON DELETE CASCADE,
  PRIMARY KEY (namespace, queue, session)
);
CREATE INDEX observers_session ON ${s}.observers (session);

-- Values a holder keeps next to its lock (guarded writes, src/backends/postgres/guarded.ts): written only
-- while the writer's entry row exists and its session's lease is alive; they outlive the holder.
CREATE TABLE ${s}.guarded_values (
  namespace text NOT NULL,
  queue text NOT NULL,
  name text NOT NULL,
  value text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
  PRIMARY KEY (namespace, queue, name)
);

CREATE FUNCTION ${s}.queue_channel(p_namespace text, p_queue text) RETURNS text LANGUAGE sql IMMUTABLE AS $$
  SELECT '${s}.q' || left(md5(p_namespace || '/' || p_queue), 16)
$$;

CREATE FUNCTION ${s}.entry_gone() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify(TG_TABLE_SCHEMA || '.e' || OLD.token, '');
  IF EXISTS (SELECT 1 FROM ${s}.observers b WHERE b.namespace = OLD.namespace AND b.queue = OLD.queue) THEN
    PERFORM pg_notify(${s}.queue_channel(OLD.namespace, OLD.queue), '');
  END IF;
  RETURN NULL;
END
$$;
CREATE TRIGGER entry_gone AFTER DELETE ON ${s}.entries FOR EACH ROW EXECUTE FUNCTION ${s}.entry_gone();

CREATE FUNCTION ${s}.open_session(p_ttl_ms bigint, p_client text) RETURNS bigint LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_id bigint;
BEGIN
  -- Sessions whose lease ran out go, with their entries (whose waiters the trigger tells). Rows another
  -- transaction is deleting are left to it: housekeeping never waits, nor deadlocks with another.
  DELETE FROM ${s}.sessions WHERE id IN (
    SELECT o.id FROM ${s}.sessions o WHERE o.expires_at <= clock_timestamp() FOR UPDATE SKIP LOCKED
  );
  INSERT INTO ${s}.sessions (ttl, expires_at, client)
    VALUES (p_ttl_ms * interval '1 millisecond', clock_timestamp() + p_ttl_ms * interval '1 millisecond', p_client)
    RETURNING id INTO v_id;
  RETURN v_id;
END
$$;

CREATE FUNCTION ${s}.list(p_namespace text, p_queue text)
  RETURNS TABLE (token bigint, key text, queue_position bigint, kind text)
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  -- One instant for both statements: an entry is left out of the listing only if the sweep below has
  -- deleted it, which waits for the row locks a guarded transaction holds on it (FOR SHARE): no waiter
  -- is granted past an entry whose holder's guarded transaction is still open.
  v_now timestamptz := clock_timestamp();
BEGIN
  -- Entries of expired sessions are ignored, and removed by whoever finds them: the expired sessions
  -- with entries or observer rows in this queue go (their entries and observer rows with them; the
  -- trigger tells the waiters).
  -- Expiry is decided on the sessions row itself, locked: a renewal committed after this statement's
  -- snapshot is seen (the lock waits for it and rechecks the row), so a renewed session's entry is never
  -- deleted. Rows are locked in id order, so that two sweeps never deadlock over them.
  DELETE FROM ${s}.sessions WHERE id IN (
    SELECT o.id FROM ${s}.sessions o
      WHERE o.expires_at <= v_now
        AND o.id IN (SELECT e.session FROM ${s}.entries e WHERE e.namespace = p_namespace AND e.queue = p_queue
                     UNION ALL SELECT b.session FROM ${s}.observers b WHERE b.namespace = p_namespace AND b.queue = p_queue)
      ORDER BY o.id
      FOR UPDATE OF o
  );
  -- A lease that runs out between the two statements counts at the next listing.
  RETURN QUERY
    SELECT e.token, e.key, e.position, e.kind FROM ${s}.entries e
    JOIN ${s}.sessions o ON o.id = e.session AND o.expires_at > v_now
    WHERE e.namespace = p_namespace AND e.queue = p_queue
    ORDER BY e.position, e.token;
END
$$;

CREATE FUNCTION ${s}.enqueue(p_session bigint, p_key text, p_namespace text, p_queue text, p_kind text, p_at bigint, p_data text)
  RETURNS TABLE (token bigint, key text, queue_position bigint, kind text, created boolean)
  LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_created boolean;
BEGIN
  v_created := ${s}.put_entry(p_session, p_key, p_namespace, p_queue, p_kind, p_at, p_data);
  -- A statement of its own: its snapshot shows every enqueue that held the lock before this one.
  RETURN QUERY SELECT l.token, l.key, l.queue_position, l.kind, v_created FROM ${s}.list(p_namespace, p_queue) l;
  -- A lease that ran out meanwhile: the listing ignored the entry; the session is gone, not the entry.
  PERFORM 1 FROM ${s}.sessions WHERE id = p_session AND expires_at > clock_timestamp();
  IF NOT FOUND THEN
    RAISE EXCEPTION 'baton session % is gone (its lease expired or it was closed)', p_session USING ERRCODE = 'BT001';
  END IF;
END
$$;

${putEntrySql(s)}
${listBeforeSql(s)}
${moversIndexSql(s)}
${enqueueAheadSql(s)}`;
}

/**
 * `put_entry`: the enqueue's write, under the queue's advisory lock (held to the commit, so that the
 * reads after it see every enqueue that held it before). Answers whether it made the entry: false when
 * an attempt whose reply was lost made it already, or when its key was withdrawn since (retired).
 */
export function putEntrySql(s: string): string {
  return `CREATE FUNCTION ${s}.put_entry(p_session bigint, p_key text, p_namespace text, p_queue text, p_kind text, p_at bigint, p_data text)
  RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_token bigint;
BEGIN
  -- Under REPEATABLE READ or SERIALIZABLE the snapshot is taken before the lock below is held: an enqueue
  -- committed meanwhile would not be seen. baton's connections ask for READ COMMITTED; refuse otherwise.
  IF current_setting('transaction_isolation') <> 'read committed' THEN
    RAISE EXCEPTION 'baton needs READ COMMITTED, this transaction runs %', current_setting('transaction_isolation')
      USING ERRCODE = 'BT002', HINT = 'do not set default_transaction_isolation for baton''s connections (options in the URL or PGOPTIONS)';
  END IF;
  -- A grant acknowledged before its commit is on disk could be lost by a crash: commit synchronously.
  PERFORM set_config('synchronous_commit', 'on', true);
  PERFORM pg_advisory_xact_lock(${LOCK_CLASS}, hashtext(p_namespace || '/' || p_queue));
  -- The session checked after the lock: its lease may run out while it waits for it.
  PERFORM 1 FROM ${s}.sessions WHERE id = p_session AND expires_at > clock_timestamp();
  IF NOT FOUND THEN
    RAISE EXCEPTION 'baton session % is gone (its lease expired or it was closed)', p_session USING ERRCODE = 'BT001';
  END IF;
  IF EXISTS (SELECT 1 FROM ${s}.entries e WHERE e.key = p_key) OR EXISTS (SELECT 1 FROM ${s}.retired r WHERE r.key = p_key) THEN
    RETURN false;
  END IF;
  v_token := nextval('${s}.tokens');
  INSERT INTO ${s}.entries (token, key, namespace, queue, position, kind, session, data)
    VALUES (v_token, p_key, p_namespace, p_queue, coalesce(p_at, v_token), p_kind, p_session, p_data);
  IF EXISTS (SELECT 1 FROM ${s}.observers b WHERE b.namespace = p_namespace AND b.queue = p_queue) THEN
    PERFORM pg_notify(${s}.queue_channel(p_namespace, p_queue), '');
  END IF;
  RETURN true;
END
$$;
`;
}

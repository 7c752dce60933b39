/** The statements the driver sends, written once per schema (each is one round trip). */
export class Statements {
  readonly enqueue: string;
  readonly list: string;
  readonly live: string;
  readonly withdraw: string;
  readonly withdrawRetired: string;
  readonly read: string;
  readonly describe: string;
  readonly confirm: string;
  readonly renew: string;
  readonly close: string;
  readonly observe: string;
  readonly unobserve: string;

  constructor(s: string) {
    const alive = `o.id = e.session AND o.expires_at > clock_timestamp()`;
    this.enqueue = `SELECT * FROM ${s}.enqueue($1, $2, $3, $4, $5, $6, $7)`;
    this.list = `SELECT * FROM ${s}.list($1, $2)`;
    this.live = `SELECT e.token FROM ${s}.entries e JOIN ${s}.sessions o ON ${alive} WHERE e.token = ANY($1::bigint[])`;
    this.withdraw = `DELETE FROM ${s}.entries WHERE key = $1 AND session = $2`;
    // The withdraw of an entry whose enqueue was sent more than once: the key is retired in the same statement.
    this.withdrawRetired =
      `WITH gone AS (DELETE FROM ${s}.entries WHERE key = $1 AND session = $2)` +
      ` INSERT INTO ${s}.retired (key, session) SELECT $1, o.id FROM ${s}.sessions o WHERE o.id = $2 ON CONFLICT DO NOTHING`;
    this.read = `SELECT e.data FROM ${s}.entries e JOIN ${s}.sessions o ON ${alive} WHERE e.key = $1 AND e.token = $2`;
    this.describe =
      `SELECT e.token, e.key, e.position AS queue_position, e.kind, e.session, e.data,` +
      ` (extract(epoch FROM e.created_at) * 1000)::float8 AS created_ms,` +
      ` (extract(epoch FROM o.expires_at - clock_timestamp()) * 1000)::float8 AS expires_in_ms` +
      ` FROM ${s}.entries e JOIN ${s}.sessions o ON ${alive}` +
      ` WHERE e.namespace = $1 AND e.queue = $2 ORDER BY e.position, e.token`;
    this.confirm = `SELECT e.key FROM ${s}.entries e JOIN ${s}.sessions o ON ${alive} WHERE e.key = $1 AND e.session = $2`;
    // An expired lease is never renewed: its session stays lost (the WHERE finds no row).
    this.renew = `UPDATE ${s}.sessions SET expires_at = clock_timestamp() + ttl WHERE id = $1 AND expires_at > clock_timestamp()`;
    this.close = `DELETE FROM ${s}.sessions WHERE id = $1`;
    this.observe = `INSERT INTO ${s}.observers (namespace, queue, session) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`;
    this.unobserve = `DELETE FROM ${s}.observers WHERE namespace = $1 AND queue = $2 AND session = $3`;
  }
}

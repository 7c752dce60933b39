/** PostgreSQL's session ids: `pg-` and the row id of the session in `<schema>.sessions`. */

/** A session's id as users see it (`session.id`, `baton inspect`), from its row's id. */
export function sessionIdOf(row: string): string {
  return `pg-${row}`;
}

/** The row id of a session id (`pg-<n>`). */
export function sessionRowOf(id: string): string {
  return id.replace(/^pg-/, '');
}

// A service that only its elected leader runs, with every node following who leads.
import { pathToFileURL } from 'node:url';

import { connect, LeaderElection, type Session } from 'baton-locks';

/** Campaigns, runs `work` while leading, and campaigns again, until `signal` aborts. */
export async function serveWhileLeader(
  session: Session,
  id: string,
  work: (signal: AbortSignal, token: bigint) => Promise<void>,
  signal: AbortSignal,
): Promise<void> {
  const election = new LeaderElection(session, 'reports/leader', { id });
  while (!signal.aborted) {
    const leadership = await election.campaign({ signal });
    try {
      await work(leadership.signal, leadership.fencingToken); // stop when leadership.signal aborts
    } finally {
      await leadership.resign();
    }
  }
}

/** Every node (leader or not) can follow the leadership, e.g. to route requests to the leader. */
export async function followLeader(session: Session, log: (line: string) => void, signal: AbortSignal): Promise<void> {
  const election = new LeaderElection(session, 'reports/leader', { id: 'follower' });
  try {
    for await (const leader of election.observe({ signal }))
      log(leader ? `leader: ${leader.id} (term ${leader.fencingToken})` : 'leader: none');
  } catch (error) {
    if (!signal.aborted) throw error;
  }
}

/** Three nodes take turns leading for a short shift each, until the follower has reported a leader. */
export async function main(url: string, log = console.log): Promise<string[]> {
  const sessions = await Promise.all([0, 1, 2, 3].map(() => connect(url)));
  const stop = new AbortController();
  const shifts: string[] = [];
  let followed = false;
  const report = (line: string): void => {
    followed ||= line !== 'leader: none';
    log(line);
  };
  const following = followLeader(sessions[3]!, report, stop.signal);
  const work = (id: string) => async (lost: AbortSignal, token: bigint) => {
    shifts.push(id);
    log(`${id} leads with token ${token}`);
    await new Promise((resolve) => setTimeout(resolve, 100)); // a shift of work; watch `lost` in real code
    if (shifts.length >= 6 && followed && !stop.signal.aborted) stop.abort();
  };
  const nodes = ['node-a', 'node-b', 'node-c'].map((id, i) =>
    serveWhileLeader(sessions[i]!, id, work(id), stop.signal).catch((error) => {
      if (!stop.signal.aborted) throw error;
    }),
  );
  try {
    await Promise.all([...nodes, following]);
    return shifts;
  } finally {
    await Promise.all(sessions.map((session) => session.close()));
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main(process.argv[2] ?? 'memory://example');

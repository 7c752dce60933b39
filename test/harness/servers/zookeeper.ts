import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

import { zkMode } from './four-letter.js';
import { zkClasspath, ZOOKEEPER_JAR } from './install.js';
import { freePort } from './ports.js';
import { makeTempDir, ServerProcess, sleep, startMembers, startServer, stopMembers, tail } from './process.js';

export { fourLetterWord } from './four-letter.js';

export interface ZkMember {
  readonly id: number;
  readonly clientPort: number;
  readonly pid: number | undefined;
  readonly dir: string;
  isAlive(): boolean;
  /** SIGKILL by default; waits until the process is gone. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** (Re)starts with the same configuration and data; waits until it serves. */
  start(): Promise<void>;
}

export interface ZkCluster {
  readonly connectString: string;
  readonly members: ZkMember[];
  readonly tickTimeMs: number;
  leader(): Promise<ZkMember | undefined>;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 30_000;
const JVM = [
  '-Xmx128m',
  '-XX:+UseSerialGC',
  '-XX:TieredStopAtLevel=1',
  '-Xshare:auto',
  '-Djava.net.preferIPv4Stack=true',
  '-Dzookeeper.admin.enableServer=false',
];

class Member extends ServerProcess implements ZkMember {
  constructor(
    readonly id: number,
    readonly clientPort: number,
    readonly dir: string,
    private readonly standalone: boolean,
  ) {
    super();
  }

  async start(): Promise<void> {
    if (this.isAlive()) return;
    if (!existsSync(ZOOKEEPER_JAR))
      throw new Error(
        'ZooKeeper is not installed (apt-get install -y zookeeper): this suite starts servers of its own, which containers do not stand in for',
      );
    const main = this.standalone
      ? 'org.apache.zookeeper.server.ZooKeeperServerMain'
      : 'org.apache.zookeeper.server.quorum.QuorumPeerMain';
    this.pid = startServer('java', [...JVM, '-cp', zkClasspath(), main, path.join(this.dir, 'zoo.cfg')], this.log);
    await this.ready();
  }

  get log(): string {
    return path.join(this.dir, 'server.log');
  }

  /** Standalone: answers ruok. Ensemble member: has joined a quorum as leader or follower. */
  async ready(): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!this.isAlive()) throw new Error(`ZooKeeper ${this.id} exited during start:\n${tail(this.log)}`);
      const mode = await zkMode(this.clientPort);
      if (this.standalone ? mode === 'standalone' : mode === 'leader' || mode === 'follower') return;
      await sleep(50);
    }
    throw new Error(
      `ZooKeeper ${this.id} on port ${this.clientPort} not ready after ${READY_TIMEOUT_MS} ms:\n${tail(this.log)}`,
    );
  }
}

/** Starts a standalone ZooKeeper or a 3-node ensemble on free 127.0.0.1 ports, each in its own temp dir. */
/** The two ports by which ensemble members reach each other: the leader's quorum port, and every member's election port. */
export type PeerLink = 'quorum' | 'election';

export interface ZkStartOptions {
  size?: 1 | 3;
  tickTimeMs?: number;
  forceSync?: boolean;
  /** How many ticks a follower may go without hearing from the leader (ZooKeeper's syncLimit; 5). */
  syncLimit?: number;
  /**
   * The port member `from` dials to reach member `to`'s `link` port `port` (a fault proxy, say); `port`
   * itself if not given. Followers dial the leader's quorum port; every member dials the others'
   * election ports (see peer-links.ts for what a proxy there must do).
   */
  peerRoute?: (from: number, to: number, port: number, link: PeerLink) => Promise<number>;
}

export async function startZooKeeper(opts: ZkStartOptions = {}): Promise<ZkCluster> {
  const size = opts.size ?? 1;
  const tickTimeMs = opts.tickTimeMs ?? 200;
  const standalone = size === 1;
  const ports = await Promise.all(
    Array.from({ length: size }, async () => ({
      client: await freePort(),
      peer: await freePort(),
      election: await freePort(),
    })),
  );
  const route = opts.peerRoute ?? ((_from: number, _to: number, port: number) => Promise.resolve(port));
  // Each member's own view of the ensemble: its own line as it listens, the others as it reaches them.
  const views = await Promise.all(
    ports.map((_, from) =>
      Promise.all(
        ports.map(async (p, to) =>
          from === to
            ? `server.${to + 1}=127.0.0.1:${p.peer}:${p.election}`
            : `server.${to + 1}=127.0.0.1:${await route(from + 1, to + 1, p.peer, 'quorum')}:${await route(from + 1, to + 1, p.election, 'election')}`,
        ),
      ),
    ),
  );
  const members = ports.map((p, i) => {
    const servers = views[i]!;
    const dir = makeTempDir('baton-zk-');
    mkdirSync(path.join(dir, 'data'));
    writeFileSync(path.join(dir, 'data', 'myid'), `${i + 1}\n`);
    const config = [
      `tickTime=${tickTimeMs}`,
      `dataDir=${path.join(dir, 'data')}`,
      `clientPort=${p.client}`,
      'clientPortAddress=127.0.0.1',
      'admin.enableServer=false',
      '4lw.commands.whitelist=ruok,srvr,stat,mntr,wchc,wchp,wchs,cons,dump,conf,envi',
      `minSessionTimeout=${2 * tickTimeMs}`,
      `maxSessionTimeout=${Math.max(40 * tickTimeMs, 20_000)}`,
      `forceSync=${opts.forceSync ? 'yes' : 'no'}`,
      'initLimit=10',
      `syncLimit=${opts.syncLimit ?? 5}`,
      'maxClientCnxns=0',
      ...(standalone ? [] : ['quorumListenOnAllIPs=false', ...servers]),
    ];
    writeFileSync(path.join(dir, 'zoo.cfg'), `${config.join('\n')}\n`);
    return new Member(i + 1, p.client, dir, standalone);
  });
  const cluster: ZkCluster = {
    connectString: members.map((m) => `127.0.0.1:${m.clientPort}`).join(','),
    members,
    tickTimeMs,
    async leader() {
      for (const member of members) if ((await zkMode(member.clientPort)) === 'leader') return member;
      return undefined;
    },
    stop: () => stopMembers(members),
  };
  await startMembers(members);
  return cluster;
}

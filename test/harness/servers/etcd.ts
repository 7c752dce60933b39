import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';

import { etcdBinary } from './install.js';
import { freePort } from './ports.js';
import {
  makeTempDir,
  memoryBackedTempParent,
  ServerProcess,
  sleep,
  startMembers,
  startServer,
  stopMembers,
  tail,
} from './process.js';
import { TcpProxy } from './proxy.js';

export interface EtcdMember {
  readonly name: string;
  readonly clientUrl: string;
  readonly peerUrl: string;
  readonly pid: number | undefined;
  readonly dir: string;
  isAlive(): boolean;
  kill(signal?: NodeJS.Signals): Promise<void>;
  start(): Promise<void>;
}

export interface EtcdCluster {
  readonly endpoints: string[];
  readonly members: EtcdMember[];
  /**
   * With `peerProxies`: the proxy each member's peers reach it through (its advertised peer URL), in
   * member order. A member can then be cut off from its peers while clients still reach it.
   */
  readonly peerProxies: TcpProxy[];
  leader(): Promise<EtcdMember | undefined>;
  /** The member's id as etcd writes it in its peer requests (hex), from its status. */
  memberId(member: EtcdMember): Promise<string>;
  /** The id (hex) of the leader `member` follows, '0' when it knows of none. */
  leaderSeenBy(member: EtcdMember): Promise<string>;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 30_000;

/** PEM files for a client-facing TLS listener that also requires client certificates. */
export interface EtcdTls {
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
  /** A client certificate and key signed by the same CA, for the health check. */
  readonly clientCertFile: string;
  readonly clientKeyFile: string;
}

class Member extends ServerProcess implements EtcdMember {
  constructor(
    readonly name: string,
    readonly clientUrl: string,
    readonly peerUrl: string,
    readonly dir: string,
    private readonly cluster: { initial: string; token: string },
    private readonly tls?: EtcdTls,
    /** Where its peers reach it, when not at `peerUrl` (a proxy). */
    private readonly advertisedPeerUrl = peerUrl,
  ) {
    super();
  }

  async start(): Promise<void> {
    if (this.isAlive()) return;
    const binary = etcdBinary();
    if (binary === undefined)
      throw new Error(
        'etcd is not installed (apt-get install -y etcd-server): this suite starts servers of its own, which containers do not stand in for',
      );
    // The same flags serve a restart: with a data dir in place, etcd ignores the initial-cluster ones.
    const args = [
      '--name',
      this.name,
      '--data-dir',
      path.join(this.dir, 'data'),
      '--listen-client-urls',
      this.clientUrl,
      '--advertise-client-urls',
      this.clientUrl,
      '--listen-peer-urls',
      this.peerUrl,
      '--initial-advertise-peer-urls',
      this.advertisedPeerUrl,
      '--initial-cluster',
      this.cluster.initial,
      '--initial-cluster-token',
      this.cluster.token,
      '--initial-cluster-state',
      'new',
      '--heartbeat-interval',
      '50',
      '--election-timeout',
      '500',
      '--logger',
      'zap',
      '--log-level',
      'warn',
      ...(this.tls === undefined
        ? []
        : [
            '--cert-file',
            this.tls.certFile,
            '--key-file',
            this.tls.keyFile,
            '--trusted-ca-file',
            this.tls.caFile,
            '--client-cert-auth',
          ]),
    ];
    this.pid = startServer(binary, args, path.join(this.dir, 'server.log'));
    await this.ready();
  }

  async ready(): Promise<void> {
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!this.isAlive())
        throw new Error(`etcd ${this.name} exited during start:\n${tail(path.join(this.dir, 'server.log'))}`);
      if (await (this.tls === undefined ? healthy(this.clientUrl) : healthyOverTls(this.clientUrl, this.tls))) return;
      await sleep(50);
    }
    throw new Error(
      `etcd ${this.name} not healthy after ${READY_TIMEOUT_MS} ms:\n${tail(path.join(this.dir, 'server.log'))}`,
    );
  }
}

async function healthy(clientUrl: string): Promise<boolean> {
  try {
    const response = await fetch(`${clientUrl}/health`, { signal: AbortSignal.timeout(1_000) });
    return ((await response.json()) as { health?: string }).health === 'true';
  } catch {
    return false;
  }
}

/** The same check over TLS with a client certificate (fetch cannot be given a CA or a client certificate). */
function healthyOverTls(clientUrl: string, tls: EtcdTls): Promise<boolean> {
  return new Promise((resolve) => {
    const request = https.get(
      `${clientUrl}/health`,
      {
        ca: readFileSync(tls.caFile),
        cert: readFileSync(tls.clientCertFile),
        key: readFileSync(tls.clientKeyFile),
        timeout: 1_000,
      },
      (response) => {
        let body = '';
        response.on('data', (chunk: Buffer) => (body += chunk.toString()));
        response.on('end', () => resolve(body.includes('"health":"true"')));
      },
    );
    request.on('error', () => resolve(false));
    request.on('timeout', () => request.destroy());
  });
}

/** The member's own id and the leader's id, from the grpc-gateway's maintenance status. */
async function status(clientUrl: string): Promise<{ member: string; leader: string } | undefined> {
  try {
    const response = await fetch(`${clientUrl}/v3/maintenance/status`, {
      method: 'POST',
      body: '{}',
      signal: AbortSignal.timeout(1_000),
    });
    const body = (await response.json()) as { header?: { member_id?: string }; leader?: string };
    if (body.header?.member_id === undefined) return undefined;
    // A member that knows of no leader leaves the field out (and says "etcdserver: no leader").
    return { member: body.header.member_id, leader: body.leader ?? '0' };
  } catch {
    return undefined;
  }
}

/** A running member's status, or an error saying it has none. */
async function statusOf(member: EtcdMember): Promise<{ member: string; leader: string }> {
  const found = member.isAlive() ? await status(member.clientUrl) : undefined;
  if (found === undefined) throw new Error(`no status from etcd ${member.name}`);
  return found;
}

/** Starts a standalone etcd or a 3-member cluster on free 127.0.0.1 ports, each in its own temp dir. */
export async function startEtcd(
  opts: { size?: 1 | 3; tls?: EtcdTls; peerProxies?: boolean } = {},
): Promise<EtcdCluster> {
  const size = opts.size ?? 1;
  const scheme = opts.tls === undefined ? 'http' : 'https';
  const ports = await Promise.all(
    Array.from({ length: size }, async () => ({ client: await freePort(), peer: await freePort() })),
  );
  const peerProxies =
    opts.peerProxies === true ? await Promise.all(ports.map((p) => TcpProxy.start({ port: p.peer }))) : [];
  const advertised = ports.map((p, i) => `http://${peerProxies[i]?.address ?? `127.0.0.1:${p.peer}`}`);
  const initial = advertised.map((url, i) => `etcd${i + 1}=${url}`).join(',');
  const token = `baton-${randomUUID()}`;
  const members = ports.map(
    (p, i) =>
      new Member(
        `etcd${i + 1}`,
        `${scheme}://127.0.0.1:${p.client}`,
        `http://127.0.0.1:${p.peer}`,
        makeTempDir('baton-etcd-', memoryBackedTempParent()),
        { initial, token },
        opts.tls,
        advertised[i],
      ),
  );
  const cluster: EtcdCluster = {
    endpoints: members.map((m) => m.clientUrl),
    members,
    async leader() {
      for (const member of members) {
        const s = member.isAlive() ? await status(member.clientUrl) : undefined;
        if (s !== undefined && s.member === s.leader) return member;
      }
      return undefined;
    },
    peerProxies,
    memberId: async (member) => BigInt((await statusOf(member)).member).toString(16),
    leaderSeenBy: async (member) => BigInt((await statusOf(member)).leader).toString(16),
    async stop() {
      await stopMembers(members);
      await Promise.all(peerProxies.map((proxy) => proxy.close()));
    },
  };
  await startMembers(members);
  return cluster;
}

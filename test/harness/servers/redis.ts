import net from 'node:net';
import path from 'node:path';

import { redisServerBinary } from './install.js';
import { freePort } from './ports.js';
import { makeTempDir, ServerProcess, sleep, startMembers, startServer, stopMembers, tail } from './process.js';

const READY_TIMEOUT_MS = 20_000;

export interface RedisServerOptions {
  /** AOF with `appendfsync always` (every write on disk before it is answered); default: no persistence. */
  readonly persistence?: boolean;
  /** `host:port` of a primary to replicate (a replica). */
  readonly replicaOf?: string;
  /** More configuration, as `--name value` arguments (e.g. `['--requirepass', 'secret']`). */
  readonly args?: readonly string[];
  /** A cluster node: its cluster bus on `busPort`, its nodes.conf in its own dir (kept across a restart). */
  readonly cluster?: { readonly busPort: number; readonly nodeTimeoutMs: number };
}

/** One redis-server of ours: on a free 127.0.0.1 port, in a temp dir, stopped by PID. */
export class RedisServer extends ServerProcess {
  readonly dir: string;

  constructor(
    readonly port: number,
    private readonly options: RedisServerOptions,
  ) {
    super();
    this.dir = makeTempDir('baton-redis-');
  }

  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  /** Starts the server (again, after a kill: with persistence it reads its AOF back). */
  async start(): Promise<void> {
    if (this.isAlive()) return;
    const binary = redisServerBinary();
    if (binary === undefined) throw new Error('redis-server is not installed (apt-get install -y redis-server)');
    const persistence = this.options.persistence === true;
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--dir',
      this.dir,
      '--daemonize',
      'no',
      '--save',
      '',
      '--appendonly',
      persistence ? 'yes' : 'no',
      ...(persistence ? ['--appendfsync', 'always'] : []),
      '--logfile',
      '',
      '--loglevel',
      'warning',
      ...(this.options.replicaOf === undefined ? [] : ['--replicaof', ...this.options.replicaOf.split(':')]),
      ...(this.options.cluster === undefined ? [] : this.clusterArgs(this.options.cluster)),
      ...(this.options.args ?? []),
    ];
    this.pid = startServer(binary, args, path.join(this.dir, 'server.log'));
    const deadline = Date.now() + READY_TIMEOUT_MS;
    while (Date.now() < deadline) {
      if (!this.isAlive())
        throw new Error(`redis-server exited during start:\n${tail(path.join(this.dir, 'server.log'))}`);
      // With a password the server answers NOAUTH: it is up all the same.
      if (/^(\+PONG|-NOAUTH)/.test(await command(this.port, ['PING']).catch(() => ''))) return;
      await sleep(20);
    }
    throw new Error(`redis-server not ready after ${READY_TIMEOUT_MS} ms:\n${tail(path.join(this.dir, 'server.log'))}`);
  }

  async stop(): Promise<void> {
    await stopMembers([this]);
  }

  /** The bus port is chosen like the client port: the default, port + 10000, may be anyone's. */
  private clusterArgs(cluster: NonNullable<RedisServerOptions['cluster']>): string[] {
    return [
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      path.join(this.dir, 'nodes.conf'),
      '--cluster-node-timeout',
      String(cluster.nodeTimeoutMs),
      '--cluster-port',
      String(cluster.busPort),
      // A replica's first sync starts at once, not after the 5 s a primary waits for more replicas.
      '--repl-diskless-sync-delay',
      '0',
    ];
  }
}

/** Starts a redis-server on a free loopback port. */
export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  const server = new RedisServer(await freePort(), options);
  try {
    await server.start();
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}

/** One command in RESP over a fresh connection, for readiness checks; the first reply line. */
export function command(port: number, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let reply = '';
    socket.setTimeout(1_000, () => socket.destroy(new Error('timed out')));
    socket.on('connect', () => socket.write(encode(args)));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString();
      const end = reply.indexOf('\r\n');
      if (end >= 0) {
        socket.end();
        resolve(reply.slice(0, end));
      }
    });
    socket.on('error', reject);
  });
}

/**
 * One command in RESP over a fresh connection, its whole reply: a simple string, an integer or a bulk
 * string (`CLUSTER INFO`), as text; an error reply rejects. Arrays are not read.
 */
export function reply(port: number, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let data = Buffer.alloc(0);
    socket.setTimeout(1_000, () => socket.destroy(new Error(`no reply from 127.0.0.1:${port} to ${args.join(' ')}`)));
    socket.on('connect', () => socket.write(encode(args)));
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const parsed = parseReply(data);
      if (parsed === undefined) return;
      socket.end();
      if (parsed.error) reject(new Error(`127.0.0.1:${port} refused ${args.join(' ')}: ${parsed.text}`));
      else resolve(parsed.text);
    });
    socket.on('error', reject);
    socket.on('close', () =>
      reject(new Error(`127.0.0.1:${port} closed the connection before replying to ${args.join(' ')}`)),
    );
  });
}

function encode(args: readonly string[]): string {
  return `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(arg)}\r\n${arg}\r\n`).join('')}`;
}

/** The reply in `data` once it is complete; undefined while it is not. */
function parseReply(data: Buffer): { error: boolean; text: string } | undefined {
  const end = data.indexOf('\r\n');
  if (end < 0) return undefined;
  const head = data.subarray(0, end).toString();
  if (!head.startsWith('$')) return { error: head.startsWith('-'), text: head.slice(1) };
  const length = Number(head.slice(1));
  if (length < 0) return { error: false, text: '' };
  if (data.length < end + 2 + length + 2) return undefined;
  return { error: false, text: data.subarray(end + 2, end + 2 + length).toString() };
}

/** Every hash slot of a Redis Cluster: 0 to 16383. */
const SLOTS = 16_384;
const CLUSTER_READY_TIMEOUT_MS = 20_000;

export interface RedisClusterOptions {
  /** Masters, each serving an equal share of the slots. Default 3. */
  readonly masters?: number;
  /** Replicas of each master (`CLUSTER REPLICATE`), which the cluster promotes when their master fails. Default 0. */
  readonly replicas?: number;
  /** `--cluster-node-timeout`: how soon a silent node is marked failing. Default 1000 ms. */
  readonly nodeTimeoutMs?: number;
  /** More configuration for every node, as `--name value` arguments. */
  readonly args?: readonly string[];
  /**
   * The port a member is to announce to clients instead of its own (`--cluster-announce-port`, with
   * `--cluster-announce-ip 127.0.0.1`), or undefined for its own: called with the member's index and
   * port before it starts (to start a proxy to it, say, whose port clients then reach it through).
   */
  readonly announce?: (member: number, port: number) => number | undefined | Promise<number | undefined>;
}

export interface RedisCluster {
  /** Every node: the masters in the order of their slot ranges, then the replicas (those of the first master first). */
  readonly members: readonly RedisServer[];
  /** The nodes that were masters when the cluster formed, in the order of their slot ranges. */
  readonly masters: readonly RedisServer[];
  /** The replicas of each of `masters` as the cluster formed, by the master's index. */
  readonly replicas: readonly (readonly RedisServer[])[];
  /** `127.0.0.1:<port>` of each member, in member order. */
  readonly addresses: readonly string[];
  /** The first node's `redis://` URL: a seed from which a cluster client finds the others. */
  readonly url: string;
  /** Kills every node and removes their directories. */
  stop(): Promise<void>;
}

/**
 * A Redis Cluster of our own: `masters` redis-servers on free loopback ports (client and bus port
 * each), the slots split among them, and `replicas` more nodes per master, all met through
 * `CLUSTER MEET`; each replica is then told `CLUSTER REPLICATE <its master's id>`. Returned once every
 * node says `cluster_state:ok` and knows every other, every replica's link to its master is up
 * (`master_link_status:up`) and every node sees each replica as its master's (so that the masters
 * vote for it when its master fails). If it cannot be formed, every node is stopped and its
 * directory removed.
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<RedisCluster> {
  const masterCount = options.masters ?? 3;
  const replicaCount = options.replicas ?? 0;
  if (!Number.isInteger(masterCount) || masterCount < 1 || masterCount > SLOTS)
    throw new Error(`masters must be an integer from 1 to ${SLOTS}, not ${masterCount}`);
  if (!Number.isInteger(replicaCount) || replicaCount < 0 || replicaCount > 5)
    throw new Error(`replicas must be an integer from 0 to 5, not ${replicaCount}`);
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 1_000;
  const total = masterCount * (1 + replicaCount);
  const ports = await Promise.all(
    Array.from({ length: total }, async () => ({ client: await freePort(), bus: await freePort() })),
  );
  const members: RedisServer[] = [];
  const masters: RedisServer[] = [];
  const replicas: RedisServer[][] = [];
  try {
    for (const [i, p] of ports.entries())
      members.push(
        new RedisServer(p.client, {
          args: [...(options.args ?? []), ...(await announceArgs(options, i, p.client))],
          cluster: { busPort: p.bus, nodeTimeoutMs },
        }),
      );
    masters.push(...members.slice(0, masterCount));
    for (let m = 0; m < masterCount; m += 1)
      replicas.push(members.slice(masterCount + m * replicaCount, masterCount + (m + 1) * replicaCount));
    await startMembers(members);
    await formCluster(
      masters,
      members,
      ports.map((p) => p.bus),
    );
    await attachReplicas(members, masters, replicas);
  } catch (error) {
    await stopMembers(members);
    throw error;
  }
  return {
    members,
    masters,
    replicas,
    addresses: members.map((m) => m.address),
    url: `redis://${members[0]!.address}`,
    stop: () => stopMembers(members),
  };
}

/** The arguments that make a member announce the port `options.announce` gives it, if any. */
async function announceArgs(options: RedisClusterOptions, member: number, port: number): Promise<string[]> {
  const announced = await options.announce?.(member, port);
  return announced === undefined
    ? []
    : ['--cluster-announce-ip', '127.0.0.1', '--cluster-announce-port', String(announced)];
}

/** What redis-cli --cluster create does: distinct epochs and slots for the masters, then the meeting of all. */
async function formCluster(
  masters: readonly RedisServer[],
  members: readonly RedisServer[],
  busPorts: readonly number[],
): Promise<void> {
  const share = Math.ceil(SLOTS / masters.length);
  await Promise.all(
    masters.map(async (member, i) => {
      // Distinct epochs from the start spare the nodes the collision handling of equal ones.
      await reply(member.port, ['CLUSTER', 'SET-CONFIG-EPOCH', String(i + 1)]);
      const first = i * share;
      const last = Math.min(SLOTS, first + share) - 1;
      if (first <= last) await reply(member.port, ['CLUSTER', 'ADDSLOTSRANGE', String(first), String(last)]);
    }),
  );
  const [seed, ...others] = members;
  for (const [i, other] of others.entries())
    await reply(seed!.port, ['CLUSTER', 'MEET', '127.0.0.1', String(other.port), String(busPorts[i + 1])]);
  await untilClusterOk(members);
}

/** A node's id in the cluster (`CLUSTER MYID`). */
export function nodeId(member: RedisServer): Promise<string> {
  return reply(member.port, ['CLUSTER', 'MYID']);
}

/**
 * Each replica replicates its master (every node knows every other by now, so the master's id is
 * known to it), and the cluster is waited for until it has taken that in everywhere.
 */
async function attachReplicas(
  members: readonly RedisServer[],
  masters: readonly RedisServer[],
  replicas: readonly (readonly RedisServer[])[],
): Promise<void> {
  const pairs = masters.flatMap((master, m) => replicas[m]!.map((replica) => ({ master, replica })));
  if (pairs.length === 0) return;
  const ids = new Map(await Promise.all(members.map(async (member) => [member, await nodeId(member)] as const)));
  for (const { master, replica } of pairs) await reply(replica.port, ['CLUSTER', 'REPLICATE', ids.get(master)!]);
  const deadline = Date.now() + CLUSTER_READY_TIMEOUT_MS;
  let missing: string[] = [];
  while (Date.now() < deadline) {
    missing = [];
    for (const { master, replica } of pairs) {
      const replication = await reply(replica.port, ['INFO', 'replication']).catch((error: Error) => error.message);
      if (!/^master_link_status:up\r?$/m.test(replication))
        missing.push(`${replica.address}: link to ${master.address} not up`);
    }
    for (const member of members) {
      const nodes = await reply(member.port, ['CLUSTER', 'NODES']).catch((error: Error) => error.message);
      for (const { master, replica } of pairs) {
        const line = nodes.split(/\r?\n/).find((entry) => entry.startsWith(`${ids.get(replica)!} `));
        if (line?.split(' ')[3] !== ids.get(master))
          missing.push(`${member.address} does not see ${replica.address} as ${master.address}'s replica`);
      }
    }
    if (missing.length === 0) {
      await untilClusterOk(members);
      return;
    }
    await sleep(50);
  }
  throw new Error(
    `Redis Cluster replicas not attached after ${CLUSTER_READY_TIMEOUT_MS} ms:\n${missing.join('\n')}\n${tail(path.join(pairs[0]!.replica.dir, 'server.log'))}`,
  );
}

/** Waits until every node reports `cluster_state:ok` and knows all the nodes. */
async function untilClusterOk(members: readonly RedisServer[]): Promise<void> {
  const deadline = Date.now() + CLUSTER_READY_TIMEOUT_MS;
  let infos: string[] = [];
  while (Date.now() < deadline) {
    infos = await Promise.all(
      members.map((m) => reply(m.port, ['CLUSTER', 'INFO']).catch((error: Error) => error.message)),
    );
    if (
      infos.every(
        (info) =>
          /^cluster_state:ok\r?$/m.test(info) &&
          new RegExp(`^cluster_known_nodes:${members.length}\\r?$`, 'm').test(info),
      )
    )
      return;
    await sleep(50);
  }
  const seen = members.map(
    (m, i) =>
      `${m.address}: ${(infos[i] ?? '')
        .split(/\r?\n/)
        .filter((line) => /^cluster_(state|slots_assigned|known_nodes)/.test(line))
        .join(' ')}`,
  );
  throw new Error(
    `Redis Cluster not formed after ${CLUSTER_READY_TIMEOUT_MS} ms:\n${seen.join('\n')}\n${tail(path.join(members[0]!.dir, 'server.log'))}`,
  );
}

import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';

export const ZOOKEEPER_JAR = '/usr/share/java/zookeeper.jar';
const SLF4J_SIMPLE = '/usr/share/java/slf4j-simple.jar';

/** The jar's manifest names the rest of ZooKeeper's runtime classpath; slf4j-simple gives it a logger. */
export function zkClasspath(): string {
  return [ZOOKEEPER_JAR, SLF4J_SIMPLE].join(':');
}

/**
 * Debian's PostgreSQL server binaries (initdb, postgres), which are not on the PATH: version 15 (what
 * the suites are run with), else the newest version installed.
 */
export function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  if (existsSync(`${root}/15/bin/postgres`)) return `${root}/15/bin`;
  let versions: number[] = [];
  try {
    versions = readdirSync(root)
      .map(Number)
      .filter((v) => Number.isInteger(v) && existsSync(`${root}/${v}/bin/postgres`));
  } catch {
    // none installed
  }
  return `${root}/${versions.length > 0 ? Math.max(...versions) : 15}/bin`;
}

/** Whether the PostgreSQL the harness starts is installed (Debian's `postgresql` package; version 15 on bookworm). */
export function postgresInstalled(): boolean {
  return existsSync(`${postgresBinDir()}/postgres`) && existsSync(`${postgresBinDir()}/initdb`);
}

/** MariaDB's server, its bootstrap and its client (Debian's `mariadb-server`; the server is not on the PATH). */
export function mariadbBinaries(): { server: string; installDb: string; client: string } {
  return { server: '/usr/sbin/mariadbd', installDb: '/usr/bin/mariadb-install-db', client: '/usr/bin/mariadb' };
}

/** Whether the MariaDB the harness starts is installed. */
export function mysqlInstalled(): boolean {
  return Object.values(mariadbBinaries()).every((file) => existsSync(file));
}

export function etcdBinary(): string | undefined {
  return binary('etcd');
}

export function redisServerBinary(): string | undefined {
  return binary('redis-server');
}

/** The first of /usr/bin and /usr/local/bin that holds `name`, else where the PATH finds it. */
function binary(name: string): string | undefined {
  for (const dir of ['/usr/bin', '/usr/local/bin']) if (existsSync(`${dir}/${name}`)) return `${dir}/${name}`;
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' });
  return found.status === 0 && found.stdout.trim() !== '' ? found.stdout.trim() : undefined;
}

/**
 * The interop tests' peers lock with the real client libraries (test/harness/interop-peers.ts): Curator's
 * recipes in a small Java program compiled by the tests, kazoo's under Debian's Python, and etcdctl.
 * This is the least classpath Curator 5.4's recipes run on with ZooKeeper 3.8's client (the jars'
 * manifests name more: Jackson, Jetty, Netty and the like, none of which the recipes load), plus
 * slf4j-simple for a logger.
 */
export const CURATOR_JARS: readonly string[] = [
  'curator-recipes',
  'curator-framework',
  'curator-client',
  'zookeeper',
  'zookeeper-jute',
  'guava',
  'slf4j-api',
  'slf4j-simple',
].map((name) => `/usr/share/java/${name}.jar`);

/** Debian's Python, which python3-kazoo installs into (not a pyenv or virtualenv python3 on the PATH). */
export const KAZOO_PYTHON = '/usr/bin/python3';

export function etcdctlBinary(): string | undefined {
  return binary('etcdctl');
}

export interface PeerTools {
  /** Curator's jars, java and javac (the peer is compiled by the tests). */
  readonly curator: boolean;
  /** kazoo importable by Debian's python3. */
  readonly kazoo: boolean;
  readonly etcdctl: boolean;
}

/** Which of the interop peers can run here. */
export function peerTools(): PeerTools {
  const kazoo =
    existsSync(KAZOO_PYTHON) &&
    spawnSync(KAZOO_PYTHON, ['-c', 'import kazoo.client'], { stdio: 'ignore', timeout: 30_000 }).status === 0;
  return {
    curator:
      CURATOR_JARS.every((jar) => existsSync(jar)) && binary('java') !== undefined && binary('javac') !== undefined,
    kazoo,
    etcdctl: etcdctlBinary() !== undefined,
  };
}

/** The Debian packages that provide the peers missing here. */
function missingPeerPackages(): string[] {
  const tools = peerTools();
  const missing: string[] = [];
  if (!tools.curator) {
    missing.push('libcurator-recipes-java', 'libcurator-framework-java', 'libcurator-client-java');
    if (binary('javac') === undefined) missing.push('default-jdk-headless');
  }
  if (!tools.kazoo) missing.push('python3-kazoo');
  if (!tools.etcdctl) missing.push('etcd-client');
  // The observability tests: promtool checks the alerting rules, a real Prometheus scrapes a test process.
  if (binary('promtool') === undefined || binary('prometheus') === undefined) missing.push('prometheus');
  return missing;
}

const PEER_PACKAGES = [
  'libcurator-recipes-java',
  'libcurator-framework-java',
  'libcurator-client-java',
  'python3-kazoo',
  'etcd-client',
  'prometheus',
];

const HOW = [
  "ZooKeeper 3.8, etcd 3.4, PostgreSQL 15 and Redis 7.0 are needed for the tests, and so are the interop tests' peers: Apache",
  "Curator 5.4 (with a JDK's javac), kazoo for Debian's /usr/bin/python3, and etcdctl. Install them with",
  `  sudo apt-get install -y zookeeper etcd-server postgresql mariadb-server redis-server ${PEER_PACKAGES.join(' ')}`,
  'or point the tests at running servers with',
  '  BATON_TEST_ZK=host:port BATON_TEST_ETCD=http://host:port BATON_TEST_POSTGRES=postgres://user@host:port/db BATON_TEST_MYSQL=mysql://user:password@host:port/db BATON_TEST_REDIS=redis://host:port npm test',
  '(for instance started with: docker compose -f docker-compose.zk.yml up -d; the peers are still needed)',
  'or start a container engine (Docker Desktop, colima, Podman with DOCKER_HOST): the tests then run',
  'ZooKeeper and etcd in containers themselves (the suites that start servers of their own still need them installed)',
].join('\n');

/** Where the shared servers of a test run come from. */
export type ServerSource = 'external' | 'local' | 'install' | 'containers';

export interface ServerSituation {
  /** BATON_TEST_ZK and BATON_TEST_ETCD name running servers. */
  readonly external: boolean;
  /** ZooKeeper's jar and etcd are installed here. */
  readonly binaries: boolean;
  /** Root with apt-get (CI): the packages can be installed. */
  readonly canInstall: boolean;
  /** Asked only when nothing before it applies: it loads testcontainers and asks the engine. */
  readonly engineAnswers: () => Promise<boolean>;
}

/**
 * Running servers named by the environment, else local binaries, else installing them (as root on
 * Debian: the full suite needs them), else containers when an engine answers; else an error saying how.
 */
export async function chooseServerSource(here: ServerSituation): Promise<ServerSource> {
  if (here.external) return 'external';
  if (here.binaries) return 'local';
  if (here.canInstall) return 'install';
  if (await here.engineAnswers()) return 'containers';
  throw new Error(
    `missing: zookeeper etcd-server postgresql mariadb-server redis-server, and no container engine answered\n${HOW}`,
  );
}

/** This machine's situation. */
export function serverSituation(engineAnswers: () => Promise<boolean>): ServerSituation {
  return {
    external: Boolean(process.env['BATON_TEST_ZK'] && process.env['BATON_TEST_ETCD']),
    binaries: existsSync(ZOOKEEPER_JAR) && etcdBinary() !== undefined,
    canInstall: process.getuid?.() === 0 && binary('apt-get') !== undefined,
    engineAnswers,
  };
}

/**
 * Makes sure the servers the tests start, and the interop tests' peers, are installed: as root (CI) it
 * installs Debian's packages for what is missing. Otherwise missing servers fail the run at once,
 * saying what to install or how to use running servers; missing peers fail only the interop suites
 * (their `requirePeers` says what to install), so that everything else still runs. With running
 * servers (BATON_TEST_ZK and BATON_TEST_ETCD) only the peers are looked at.
 */
export async function ensureServersInstalled(): Promise<void> {
  const external = process.env['BATON_TEST_ZK'] && process.env['BATON_TEST_ETCD'];
  const serversMissing = !external && (!existsSync(ZOOKEEPER_JAR) || etcdBinary() === undefined);
  const postgresMissing = !process.env['BATON_TEST_POSTGRES'] && !postgresInstalled();
  const mysqlMissing = !process.env['BATON_TEST_MYSQL'] && !mysqlInstalled();
  // Redis: the shared server may be a running one, but the fault tests start servers of their own.
  const redisMissing = redisServerBinary() === undefined;
  const root = process.getuid?.() === 0;
  const missing = [
    ...(serversMissing ? ['zookeeper', 'etcd-server'] : []),
    ...(postgresMissing ? ['postgresql'] : []),
    ...(mysqlMissing ? ['mariadb-server'] : []),
    ...(redisMissing ? ['redis-server'] : []),
  ];
  if (missing.length > 0 && !root && !(missing.length === 1 && redisMissing && process.env['BATON_TEST_REDIS']))
    throw new Error(`missing: ${missing.join(' ')}\n${HOW}`);
  const packages = [...(root ? missing : []), ...(root ? missingPeerPackages() : [])];
  if (packages.length === 0) return;
  process.stderr.write(`baton tests: installing ${packages.join(' ')} from Debian packages\n`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', ...packages]]) {
    const run = spawnSync('apt-get', args, { stdio: ['ignore', 2, 2], env, timeout: 600_000 });
    if (run.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (status ${run.status})\n${HOW}`);
  }
  if (!external && (!existsSync(ZOOKEEPER_JAR) || etcdBinary() === undefined))
    throw new Error(`installation did not provide the servers\n${HOW}`);
  if (postgresMissing && !postgresInstalled())
    throw new Error(`installation did not provide PostgreSQL 15 (${postgresBinDir()})\n${HOW}`);
  if (mysqlMissing && !mysqlInstalled()) throw new Error(`installation did not provide MariaDB\n${HOW}`);
  if (root && redisServerBinary() === undefined) throw new Error(`installation did not provide redis-server\n${HOW}`);
  const still = missingPeerPackages();
  if (still.length > 0) throw new Error(`installation did not provide the interop peers (${still.join(' ')})\n${HOW}`);
}

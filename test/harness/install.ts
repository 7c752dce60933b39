import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

export const ZOOKEEPER_JAR = '/usr/share/java/zookeeper.jar';
const SLF4J_SIMPLE = '/usr/share/java/slf4j-simple.jar';

/** The jar's manifest names the rest of ZooKeeper's runtime classpath; slf4j-simple gives it a logger. */
export function zkClasspath(): string {
  return [ZOOKEEPER_JAR, SLF4J_SIMPLE].join(':');
}

export function etcdBinary(): string | undefined {
  for (const candidate of ['/usr/bin/etcd', '/usr/local/bin/etcd']) if (existsSync(candidate)) return candidate;
  const found = spawnSync('sh', ['-c', 'command -v etcd'], { encoding: 'utf8' });
  return found.status === 0 ? found.stdout.trim() : undefined;
}

const HOW = [
  'ZooKeeper 3.8 and etcd 3.4 are needed for the tests. Install them with',
  '  sudo apt-get install -y zookeeper etcd-server',
  'or point the tests at running servers with',
  '  BATON_TEST_ZK=host:port BATON_TEST_ETCD=http://host:port npm test',
  '(for instance started with: docker compose -f docker-compose.zk.yml up -d)',
].join('\n');

/**
 * Makes sure the servers the tests start are installed: as root (CI) it installs Debian's packages,
 * otherwise it fails at once saying what to install or how to use running servers.
 */
export async function ensureServersInstalled(): Promise<void> {
  const external = process.env['BATON_TEST_ZK'] && process.env['BATON_TEST_ETCD'];
  if (external || (existsSync(ZOOKEEPER_JAR) && etcdBinary() !== undefined)) return;
  if (process.getuid?.() !== 0) throw new Error(HOW);
  process.stderr.write('baton tests: installing zookeeper and etcd-server from Debian packages\n');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [['update'], ['install', '-y', 'zookeeper', 'etcd-server']]) {
    const run = spawnSync('apt-get', args, { stdio: ['ignore', 2, 2], env, timeout: 600_000 });
    if (run.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (status ${run.status})\n${HOW}`);
  }
  if (!existsSync(ZOOKEEPER_JAR) || etcdBinary() === undefined) throw new Error(`installation did not provide the servers\n${HOW}`);
}

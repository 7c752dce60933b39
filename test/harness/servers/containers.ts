import { fourLetterWord } from './four-letter.js';

/**
 * ZooKeeper and etcd in containers, for a developer whose machine has no local server binaries but a
 * container engine (Docker Desktop on macOS or Windows, colima, Podman with DOCKER_HOST). testcontainers
 * is a development dependency loaded only on this path; CI never takes it (it has the binaries).
 * One container of each server stands in for the standalone and the cluster, as servers given with
 * BATON_TEST_ZK / BATON_TEST_ETCD do.
 */

export const ZOOKEEPER_IMAGE = 'zookeeper:3.8';
export const ETCD_IMAGE = 'quay.io/coreos/etcd:v3.4.34';

export interface ContainerServers {
  /** `127.0.0.1:port` */
  readonly zkConnectString: string;
  /** `http://127.0.0.1:port` */
  readonly etcdEndpoint: string;
  stop(): Promise<void>;
}

/** Whether a container engine answers here within `withinMs` (a `docker` client alone is not one). */
export async function containerEngineAnswers(withinMs = 15_000): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const silent = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, withinMs, false)).unref());
  const asking = import('testcontainers')
    .then(({ getContainerRuntimeClient }) => getContainerRuntimeClient().then(() => true))
    .catch(() => false);
  try {
    return await Promise.race([asking, silent]);
  } finally {
    clearTimeout(timer);
  }
}

/** Starts both servers with the settings of the local harness (tickTime, four-letter words, etcd timings). */
export async function startContainers(tickTimeMs: number): Promise<ContainerServers> {
  const { GenericContainer, Wait } = await import('testcontainers');
  /** Docker publishes a port on every interface unless told; the harness's servers listen on 127.0.0.1 only. */
  class OnLoopback extends GenericContainer {
    constructor(image: string, port: number) {
      super(image);
      this.withExposedPorts(port);
      this.hostConfig.PortBindings = { [`${port}/tcp`]: [{ HostIp: '127.0.0.1', HostPort: '' }] };
    }
  }
  const onLoopback = (image: string, port: number): OnLoopback => new OnLoopback(image, port);
  const zooCfg = [
    'dataDir=/data',
    'clientPort=2181',
    `tickTime=${tickTimeMs}`,
    '4lw.commands.whitelist=ruok,srvr,stat,mntr,wchc,wchp,wchs,cons,dump,conf,envi',
    `minSessionTimeout=${2 * tickTimeMs}`,
    `maxSessionTimeout=${Math.max(40 * tickTimeMs, 20_000)}`,
    'forceSync=no',
    'admin.enableServer=false',
  ].join('\n');
  const etcdArgs = [
    '--name',
    'etcd1',
    '--data-dir',
    '/tmp/etcd',
    '--listen-client-urls',
    'http://0.0.0.0:2379',
    '--advertise-client-urls',
    'http://127.0.0.1:2379',
  ];
  const [zk, etcd] = await Promise.all([
    onLoopback(ZOOKEEPER_IMAGE, 2181)
      .withCopyContentToContainer([{ content: `${zooCfg}\n`, target: '/conf/zoo.cfg' }])
      .withStartupTimeout(120_000)
      .start(),
    onLoopback(ETCD_IMAGE, 2379)
      .withCommand([
        '/usr/local/bin/etcd',
        ...etcdArgs,
        '--heartbeat-interval',
        '50',
        '--election-timeout',
        '500',
        '--log-level',
        'warn',
      ])
      .withWaitStrategy(Wait.forHttp('/health', 2379).forStatusCode(200))
      .withStartupTimeout(120_000)
      .start(),
  ]);
  const zkPort = zk.getMappedPort(2181);
  const stop = async (): Promise<void> => {
    await Promise.allSettled([zk.stop(), etcd.stop()]);
  };
  try {
    await untilServing(zkPort);
  } catch (error) {
    await stop();
    throw error;
  }
  return { zkConnectString: `127.0.0.1:${zkPort}`, etcdEndpoint: `http://127.0.0.1:${etcd.getMappedPort(2379)}`, stop };
}

/** The port is published before the JVM serves on it. */
async function untilServing(port: number): Promise<void> {
  for (let attempt = 0; attempt < 120; attempt += 1) {
    if ((await fourLetterWord(port, 'ruok').catch(() => '')) === 'imok') return;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`the ZooKeeper container did not answer ruok on 127.0.0.1:${port} within a minute`);
}

import type { Backend } from '../backend.js';
import { refuseZkAccessElsewhere, type ZkAccess, zkAccess } from './options.js';
import type { ZkProbe } from './probe.js';
import { parseZkUrl } from './url.js';

/** ZooKeeper: `zk://host:port[,host:port...][/namespace]`. */
export const zookeeper: Backend<undefined, ZkAccess> = {
  scheme: 'zk',
  title: 'ZooKeeper',
  schemes: ['zk'],
  aliases: ['zookeeper'],
  urlForm: 'zk://host:port[,host:port...][/namespace]',
  parseUrl: parseZkUrl,
  resolvesHosts: true,
  options: {
    keys: ['auth', 'acl'],
    check: (given) => zkAccess(given['auth'], given['acl']),
    refuseElsewhere: refuseZkAccessElsewhere,
  },
  async open({ url, own, sessionTimeoutMs, connectTimeoutMs, signal, probe }) {
    const { ZkDriver } = await import('./driver.js');
    return ZkDriver.open(
      {
        hosts: url.hosts.join(','),
        namespace: `/${url.namespace}`,
        sessionTimeoutMs,
        connectTimeoutMs,
        signal,
        auth: own.auth,
        acl: own.acl,
      },
      probe as ZkProbe | undefined,
    );
  },
  testing: async () => (await import('./testing.js')).default,
  cli: {
    example: (namespace) => `zk://127.0.0.1:2181/${namespace}`,
    credentialsHelp: 'BATON_ZK_DIGEST=user:password',
    credentials(env) {
      const digest = env['BATON_ZK_DIGEST'];
      return digest ? { auth: { scheme: 'digest', credentials: digest } } : {};
    },
  },
};

import type { Backend } from '../backend.js';
import { parseHostList } from '../url-forms.js';
import { type EtcdSettings, etcdSettings } from './options.js';
import type { EtcdProbe } from './probe.js';

/** etcd: `etcd://host:port[,host:port...][/namespace]`; TLS when `etcd.credentials` is given. */
export const etcd: Backend<undefined, EtcdSettings> = {
  scheme: 'etcd',
  title: 'etcd',
  schemes: ['etcd'],
  urlForm: 'etcd://host:port[,...][/namespace]',
  parseUrl(url, expected) {
    const { hosts, namespace } = parseHostList(url, expected);
    return { scheme: 'etcd', hosts, namespace, target: undefined };
  },
  resolvesHosts: true,
  // ttlSeconds goes with every URL (one demo command line for all backends): elsewhere it is unused.
  options: { keys: ['ttlSeconds', 'etcd'], check: etcdSettings },
  async open({ url, own, connectTimeoutMs, signal, probe }) {
    const tls = own.client?.credentials !== undefined;
    const { EtcdDriver } = await import('./driver.js');
    return EtcdDriver.open(
      {
        hosts: url.hosts.map((host) => `${tls ? 'https' : 'http'}://${host}`),
        namespace: url.namespace,
        ttlSeconds: own.ttlSeconds,
        connectTimeoutMs,
        ...(signal === undefined ? {} : { signal }),
        ...(own.client === undefined ? {} : { client: own.client }),
      },
      probe as EtcdProbe | undefined,
    );
  },
  testing: async () => (await import('./testing.js')).default,
  cli: {
    example: (namespace) => `etcd://127.0.0.1:2379/${namespace}`,
    credentialsHelp: 'BATON_ETCD_USER and BATON_ETCD_PASSWORD',
    credentials(env) {
      const user = env['BATON_ETCD_USER'];
      return user ? { etcd: { auth: { username: user, password: env['BATON_ETCD_PASSWORD'] ?? '' } } } : {};
    },
  },
};

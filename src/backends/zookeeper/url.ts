import { InvalidArgumentError } from '../../../recipes/errors.js';
import type { ParsedUrl } from '../backend.js';
import { parseHostList } from '../url-forms.js';

/**
 * `zk://host:port[,host:port...][/namespace]` (also `zookeeper://`). IPv6 addresses are refused:
 * node-zookeeper-client splits host and port at the first colon, and would crash the process.
 */
export function parseZkUrl(url: string, expected: string): ParsedUrl<undefined> {
  const { hosts, namespace, path } = parseHostList(url, expected);
  if (hosts.some((host) => host.startsWith('['))) {
    throw new InvalidArgumentError(
      'url',
      url,
      'host names or IPv4 addresses: the ZooKeeper client cannot dial an IPv6 address (use a name that resolves to it)',
    );
  }
  if (namespace.split('/')[0] === 'zookeeper') {
    throw new InvalidArgumentError(
      'url namespace',
      path,
      'a namespace outside /zookeeper, which is reserved by ZooKeeper for its own use',
    );
  }
  return { scheme: 'zk', hosts, namespace, target: undefined };
}

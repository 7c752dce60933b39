import { InvalidArgumentError } from '../../../recipes/errors.js';
import type { Backend } from '../backend.js';
import { parseNamespace, splitWithoutCredentials } from '../url-forms.js';
import { MemoryDriver } from './driver.js';
import { expireMemorySession } from './expire.js';
import { memoryStore } from './store.js';

/** memory: `memory://name[/namespace]`, one store per name, in this process (demos and unit tests). */
export const memory: Backend<undefined, undefined> = {
  scheme: 'memory',
  title: 'memory',
  schemes: ['memory'],
  urlForm: 'memory://name[/namespace]',
  parseUrl(url, expected) {
    const { authority, path } = splitWithoutCredentials(url, expected);
    const hosts = authority.split(',').map((host) => host.trim());
    if (hosts.length !== 1 || !/^[A-Za-z0-9._-]+$/.test(hosts[0] ?? '')) {
      throw new InvalidArgumentError('memory store name', authority, 'one name of [A-Za-z0-9._-], as in memory://test');
    }
    return { scheme: 'memory', hosts, namespace: parseNamespace(path), target: undefined };
  },
  resolvesHosts: false,
  inProcess: { expire: expireMemorySession },
  options: { keys: [], check: () => undefined },
  open: async ({ url }) => new MemoryDriver(memoryStore(url.hosts[0] ?? ''), url.namespace),
  cli: {},
};

import type { Backend } from '../backend.js';
import {
  fitRedisUrl,
  redisClientOptions,
  type RedisSettings,
  refuseRedisElsewhere,
  withCredentials,
} from './options.js';
import type { RedisProbe } from './probe.js';
import { parseRedisUrl, type RedisTarget } from './url.js';

/** Redis: `redis://[user:password@]host:port[,host:port...][/db][?namespace=ns]`, `rediss://` with TLS. */
export const redis: Backend<RedisTarget, RedisSettings> = {
  scheme: 'redis',
  title: 'Redis',
  schemes: ['redis', 'rediss'],
  urlForm: 'redis://[user:password@]host:port[,host:port...][/db][?namespace=ns]',
  parseUrl: parseRedisUrl,
  resolvesHosts: true,
  options: {
    keys: ['redis'],
    check: (given) => ({ client: redisClientOptions(given['redis']) }),
    refuseElsewhere: refuseRedisElsewhere,
    fitUrl: fitRedisUrl,
  },
  async open({ url, own, sessionTimeoutMs, connectTimeoutMs, signal, probe }) {
    const { RedisDriver } = await import('./driver.js');
    return RedisDriver.open(
      {
        hosts: url.hosts,
        target: withCredentials(url.target, own.client),
        namespace: url.namespace,
        sessionTimeoutMs,
        connectTimeoutMs,
        signal,
        tls: own.client?.tls,
      },
      probe as RedisProbe | undefined,
    );
  },
  testing: async () => (await import('./testing.js')).default,
  cli: {
    example: (namespace) => `redis://127.0.0.1:6379?namespace=${namespace}`,
    credentialsHelp: 'BATON_REDIS_USER and BATON_REDIS_PASSWORD',
    credentials(env) {
      const user = env['BATON_REDIS_USER'];
      const password = env['BATON_REDIS_PASSWORD'];
      if (!user && !password) return {};
      return { redis: { ...(user ? { username: user } : {}), ...(password ? { password } : {}) } };
    },
  },
};

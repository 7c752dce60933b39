import type { Etcd3 } from 'etcd3';

type Service = { close(): void; waitForReady?: (deadline: number, callback: (error?: Error) => void) => void };
type Host = { getServiceClient?: (name: string) => Service };

/**
 * While a session is being opened, etcd3's gRPC services on this client close without delay.
 * etcd3 drops a member's services after each failed call and, when a channel is still connecting,
 * waits up to a second for it before closing it (a workaround for an old gRPC bug): that wait kept the
 * process alive for a second after a connect had already failed. Only this client's objects are
 * touched (own properties, removed by `restore` once the session is open).
 */
export function closeServicesPromptly(client: Etcd3): { restore(): void } {
  const made = new Set<Service>();
  const hosts = ((client as unknown as { pool?: { hosts?: Host[] } }).pool?.hosts ?? []).filter(
    (host) => typeof host.getServiceClient === 'function',
  );
  for (const host of hosts) {
    const make = host.getServiceClient!;
    host.getServiceClient = function (this: Host, name: string) {
      const service = make.call(this, name);
      if (!made.has(service) && typeof service.waitForReady === 'function') {
        made.add(service);
        service.waitForReady = (_deadline, callback) => callback(new Error('not waited for: the connect failed'));
      }
      return service;
    };
  }
  return {
    restore: () => {
      for (const host of hosts) delete host.getServiceClient;
      for (const service of made) delete service.waitForReady;
      made.clear();
    },
  };
}

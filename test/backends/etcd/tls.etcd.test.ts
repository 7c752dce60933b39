import { readFileSync } from 'node:fs';

import { connect } from 'baton-locks/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BackendError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { backendOf } from '../../harness/internals.js';
import { type EtcdCluster, startEtcd } from '../../harness/servers/etcd.js';
import { makeCertificates, type TestCertificates } from '../../harness/tls-certificates.js';

/** An etcd of its own that speaks only TLS and requires a client certificate. */
describe('etcd over TLS with client certificates', () => {
  let etcd: EtcdCluster;
  let certs: TestCertificates;
  const url = (): string => `etcd://${etcd.endpoints[0]!.replace('https://', '')}/tls`;
  const credentials = (ca: string, withClient = true) => ({
    rootCertificate: readFileSync(ca),
    ...(withClient
      ? { certChain: readFileSync(certs.clientCertFile), privateKey: readFileSync(certs.clientKeyFile) }
      : {}),
  });

  beforeAll(async () => {
    certs = makeCertificates();
    etcd = await startEtcd({ size: 1, tls: certs });
  }, 60_000);

  afterAll(async () => {
    await etcd?.stop();
    certs?.remove();
  });

  it('locks over TLS with the CA and a client certificate passed through to etcd3', async () => {
    const session = await connect(url(), { ttlSeconds: 2, etcd: { credentials: credentials(certs.caFile) } });
    try {
      const lock = await new FairMutex(session, 'jobs').acquire({ timeoutMs: 5_000 });
      expect(lock.held).toBe(true);
      await lock.release();
      expect(await backendOf(session).list('jobs')).toEqual([]);
    } finally {
      await session.close();
    }
  });

  it('fails to connect (within the connect timeout: the test would time out otherwise) without a client certificate, with an untrusted CA, or in plain text', async () => {
    for (const options of [
      { etcd: { credentials: credentials(certs.caFile, false) } },
      { etcd: { credentials: credentials(certs.otherCaFile) } },
      {},
    ]) {
      const error = await connect(url(), { ttlSeconds: 2, connectTimeoutMs: 2_000, ...options }).then(
        async (session) => {
          await session.close();
          return undefined;
        },
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(BackendError);
    }
  });
});

import { readFileSync } from 'node:fs';

import { connect } from 'baton-locks/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

import { BackendError } from '../../../recipes/errors.js';
import { FairMutex } from '../../../recipes/mutex.js';
import { freePort } from '../../harness/servers/ports.js';
import { type RedisServer, startRedis } from '../../harness/servers/redis.js';
import { makeCertificates, type TestCertificates } from '../../harness/tls-certificates.js';

describe('Redis over TLS (rediss://)', () => {
  let certificates: TestCertificates;
  let server: RedisServer;
  let tlsPort: number;
  beforeAll(async () => {
    certificates = makeCertificates();
    tlsPort = await freePort();
    server = await startRedis({
      args: [
        '--tls-port',
        String(tlsPort),
        '--tls-cert-file',
        certificates.certFile,
        '--tls-key-file',
        certificates.keyFile,
        '--tls-ca-cert-file',
        certificates.caFile,
        '--tls-auth-clients',
        'no',
      ],
    });
  });
  afterAll(async () => {
    await server?.stop();
    certificates?.remove();
  });

  it('locks over TLS with the CA given, and refuses a server its CA did not sign', async () => {
    const session = await connect(`rediss://127.0.0.1:${tlsPort}?namespace=tls`, {
      sessionTimeoutMs: 2_000,
      redis: { tls: { ca: readFileSync(certificates.caFile) } },
    });
    const lock = await new FairMutex(session, 'over-tls').acquire();
    expect(lock.fencingToken).toBeGreaterThan(0n);
    await lock.release();
    await session.close();
    const refused = await connect(`rediss://127.0.0.1:${tlsPort}?namespace=tls`, {
      sessionTimeoutMs: 2_000,
      connectTimeoutMs: 1_500,
      redis: { tls: { ca: readFileSync(certificates.otherCaFile) } },
    }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(BackendError);
  });
});

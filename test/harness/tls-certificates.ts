import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';

import type { EtcdTls } from './servers/etcd.js';
import { makeTempDir, removeTempDir } from './servers/process.js';

export interface TestCertificates extends EtcdTls {
  /** A second CA that signed nothing the server trusts. */
  readonly otherCaFile: string;
  /** Deletes the folder with the keys (private keys: nothing of them may stay in the temp dir). */
  remove(): void;
}

/** A throw-away CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl. */
export function makeCertificates(): TestCertificates {
  const dir = makeTempDir('baton-certs-');
  const file = (name: string): string => path.join(dir, name);
  const openssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });
  for (const ca of ['ca', 'other-ca']) {
    openssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '2',
      '-subj',
      `/CN=baton test ${ca}`,
      '-keyout',
      file(`${ca}.key`),
      '-out',
      file(`${ca}.pem`),
    );
  }
  writeFileSync(
    file('server.ext'),
    'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n',
  );
  writeFileSync(file('client.ext'), 'extendedKeyUsage=clientAuth\n');
  for (const [name, subject] of [
    ['server', '/CN=127.0.0.1'],
    ['client', '/CN=baton-client'],
  ] as const) {
    openssl(
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-subj',
      subject,
      '-keyout',
      file(`${name}.key`),
      '-out',
      file(`${name}.csr`),
    );
    openssl(
      'x509',
      '-req',
      '-in',
      file(`${name}.csr`),
      '-CA',
      file('ca.pem'),
      '-CAkey',
      file('ca.key'),
      '-CAcreateserial',
      '-days',
      '2',
      '-extfile',
      file(`${name}.ext`),
      '-out',
      file(`${name}.pem`),
    );
  }
  return {
    caFile: file('ca.pem'),
    certFile: file('server.pem'),
    keyFile: file('server.key'),
    clientCertFile: file('client.pem'),
    clientKeyFile: file('client.key'),
    otherCaFile: file('other-ca.pem'),
    remove: () => removeTempDir(dir),
  };
}

/**
 * A fresh self-signed TLS certificate for servers on loopback (the fake webhook receiver, the test git server),
 * valid for `localhost` and `127.0.0.1` for one day; clients trust it through its file (NODE_EXTRA_CA_CERTS,
 * GIT_SSL_CAINFO).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

export interface LoopbackCertificate {
  keyFile: string;
  /** The certificate, which is also its own CA. */
  certFile: string;
  key: Buffer;
  cert: Buffer;
}

/**
 * @param dir a private directory the key and certificate are written to.
 * @returns the files and their contents.
 */
export function loopbackCertificate(dir: string): LoopbackCertificate {
  const keyFile = path.join(dir, 'key.pem');
  const certFile = path.join(dir, 'cert.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      keyFile,
      '-out',
      certFile,
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
    ],
    { stdio: 'ignore' }
  );
  return { keyFile, certFile, key: readFileSync(keyFile), cert: readFileSync(certFile) };
}

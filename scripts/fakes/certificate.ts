/**
 * TLS certificates made on the spot with openssl, for servers on loopback: a self-signed certificate (the fake
 * webhook receiver, the test git server), valid for `localhost` and `127.0.0.1` for one day, which clients trust
 * through its file (NODE_EXTRA_CA_CERTS, GIT_SSL_CAINFO); and a small certificate authority that issues server and
 * client certificates (the Temporal TLS and mTLS tests).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export interface LoopbackCertificate {
  keyFile: string;
  /** The certificate, which is also its own CA. */
  certFile: string;
  key: Buffer;
  cert: Buffer;
}

const openssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });

/**
 * @param dir a private directory the key and certificate are written to.
 * @param address another address it is valid for (a host of the multi-host test bed), besides loopback.
 * @returns the files and their contents.
 */
export function loopbackCertificate(dir: string, address?: string): LoopbackCertificate {
  const keyFile = path.join(dir, 'key.pem');
  const certFile = path.join(dir, 'cert.pem');
  openssl(
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
    `subjectAltName=DNS:localhost,IP:127.0.0.1${address ? `,IP:${address}` : ''}`
  );
  return { keyFile, certFile, key: readFileSync(keyFile), cert: readFileSync(certFile) };
}

export interface CertificateAuthority extends LoopbackCertificate {
  /**
   * Issues a certificate signed by this authority (one day, EC P-256).
   * @param name the file prefix and common name.
   * @param use `server` (serverAuth, for the names given) or `client` (clientAuth).
   * @param names the server's DNS names (`DNS:…`) and addresses (`IP:…`).
   * @returns its files and contents.
   */
  issue(name: string, use: 'server' | 'client', names?: string[]): LoopbackCertificate;
}

/**
 * @param dir a private directory the files are written to.
 * @param name the authority's common name (and file prefix).
 * @returns a certificate authority (its certificate is what clients or servers trust).
 */
export function certificateAuthority(dir: string, name: string): CertificateAuthority {
  const keyFile = path.join(dir, `${name}-key.pem`);
  const certFile = path.join(dir, `${name}.pem`);
  openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', keyFile);
  openssl(
    'req',
    '-x509',
    '-new',
    '-key',
    keyFile,
    '-out',
    certFile,
    '-days',
    '1',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign'
  );
  return {
    keyFile,
    certFile,
    key: readFileSync(keyFile),
    cert: readFileSync(certFile),
    issue(leaf, use, names = []) {
      const leafKey = path.join(dir, `${leaf}-key.pem`);
      const leafCert = path.join(dir, `${leaf}.pem`);
      const request = path.join(dir, `${leaf}.csr`);
      const extensions = path.join(dir, `${leaf}.ext`);
      const ecKey = path.join(dir, `${leaf}-ec.pem`);
      openssl('ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', ecKey);
      // PKCS#8, as most tools write keys today.
      openssl('pkcs8', '-topk8', '-nocrypt', '-in', ecKey, '-out', leafKey);
      openssl('req', '-new', '-key', leafKey, '-out', request, '-subj', `/CN=${leaf}`);
      writeFileSync(
        extensions,
        [
          'basicConstraints=critical,CA:FALSE',
          'keyUsage=critical,digitalSignature,keyEncipherment',
          `extendedKeyUsage=${use === 'server' ? 'serverAuth' : 'clientAuth'}`,
          ...(names.length > 0 ? [`subjectAltName=${names.join(',')}`] : []),
        ].join('\n')
      );
      openssl(
        'x509',
        '-req',
        '-in',
        request,
        '-CA',
        certFile,
        '-CAkey',
        keyFile,
        '-CAcreateserial',
        '-out',
        leafCert,
        '-days',
        '1',
        '-extfile',
        extensions
      );
      return { keyFile: leafKey, certFile: leafCert, key: readFileSync(leafKey), cert: readFileSync(leafCert) };
    },
  };
}

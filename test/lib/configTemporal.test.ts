/**
 * The Temporal connection settings, validated once at start-up (lib/configTemporal.ts through loadConfig), and the
 * options built from them (lib/temporal.ts `temporalConnectionOptions`).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfig } from '../../lib/config';
import { temporalConnectionOptions } from '../../lib/temporal';
import { certificateAuthority } from '../../scripts/fakes/certificate';

const dir = mkdtempSync(path.join(os.tmpdir(), 'aas-tlsconfig-'));
const ca = certificateAuthority(dir, 'ca');
const client = ca.issue('client', 'client');
const other = ca.issue('other', 'client');

/** @returns the problems loadConfig reports for `env`. */
function problems(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  return [];
}

describe('Temporal connection settings', () => {
  it('plaintext by default: the options are the address alone', () => {
    expect(temporalConnectionOptions(loadConfig({ TEMPORAL_ADDRESS: 'temporal:7233' }))).toEqual({
      address: 'temporal:7233',
      tls: false,
    });
  });

  it('mTLS from files: CA, certificate pair and server name in the options', () => {
    const config = loadConfig({
      TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233',
      TEMPORAL_TLS_CA_PATH: ca.certFile,
      TEMPORAL_TLS_CERT_PATH: client.certFile,
      TEMPORAL_TLS_KEY_PATH: client.keyFile,
      TEMPORAL_TLS_SERVER_NAME: 'temporal.internal',
    });
    expect(temporalConnectionOptions(config)).toEqual({
      address: 'ns.acct.tmprl.cloud:7233',
      tls: {
        serverNameOverride: 'temporal.internal',
        serverRootCACertificate: ca.cert,
        clientCertPair: { crt: client.cert, key: client.key },
      },
    });
  });

  it('PEM text in the variables themselves, with newlines written as \\n (one-line .env files)', () => {
    const oneLine = (b: Buffer): string => b.toString().trim().replace(/\n/g, '\\n');
    const config = loadConfig({ TEMPORAL_TLS_CERT: oneLine(client.cert), TEMPORAL_TLS_KEY: client.key.toString() });
    expect(config.temporalTls?.clientCertPair?.crt.toString().trim()).toBe(client.cert.toString().trim());
    expect(config.temporalTls?.clientCertPair?.key.toString()).toBe(client.key.toString().trim());
  });

  it('an API key turns TLS on (Temporal Cloud) with the system CAs; TEMPORAL_TLS=false keeps plaintext', () => {
    expect(temporalConnectionOptions(loadConfig({ TEMPORAL_API_KEY: 'key' }))).toEqual({
      address: '127.0.0.1:7233',
      tls: {},
      apiKey: 'key',
    });
    expect(temporalConnectionOptions(loadConfig({ TEMPORAL_API_KEY: 'key', TEMPORAL_TLS: 'false' }))).toEqual({
      address: '127.0.0.1:7233',
      tls: false,
      apiKey: 'key',
    });
    expect(loadConfig({ TEMPORAL_TLS: 'true' }).temporalTls).toEqual({});
  });

  it('a certificate without its key (or a key alone) is refused, naming both', () => {
    const both = 'TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY (or their _PATH forms): set both for mTLS, or neither';
    expect(problems({ TEMPORAL_TLS_CERT_PATH: client.certFile })).toEqual([
      `${both} (only TEMPORAL_TLS_CERT_PATH is set)`,
    ]);
    expect(problems({ TEMPORAL_TLS_KEY: client.key.toString() })).toEqual([`${both} (only TEMPORAL_TLS_KEY is set)`]);
  });

  it('refuses what cannot work, one line each', () => {
    expect(
      problems({
        TEMPORAL_TLS_CA_PATH: path.join(dir, 'missing.pem'),
        TEMPORAL_TLS_CERT: 'not a certificate',
        TEMPORAL_TLS_KEY_PATH: client.keyFile,
        TEMPORAL_TLS: 'maybe',
      })
    ).toEqual([
      'TEMPORAL_TLS_CERT: must hold PEM text (-----BEGIN …); for a file use TEMPORAL_TLS_CERT_PATH',
      `TEMPORAL_TLS_CA_PATH=${JSON.stringify(path.join(dir, 'missing.pem'))}: cannot read it (ENOENT)`,
      'TEMPORAL_TLS="maybe": must be true or false',
    ]);
    expect(problems({ TEMPORAL_TLS_CERT_PATH: client.certFile, TEMPORAL_TLS_KEY_PATH: other.keyFile })).toEqual([
      'TEMPORAL_TLS_CERT_PATH and TEMPORAL_TLS_KEY_PATH: the key does not belong to the certificate',
    ]);
    expect(problems({ TEMPORAL_TLS_CERT_PATH: client.keyFile, TEMPORAL_TLS_KEY_PATH: client.certFile })).toEqual([
      'TEMPORAL_TLS_CERT_PATH: not a PEM certificate',
      'TEMPORAL_TLS_KEY_PATH: not a PEM private key (unencrypted PKCS#8, PKCS#1 or SEC1)',
    ]);
    expect(problems({ TEMPORAL_TLS_CA: ca.cert.toString(), TEMPORAL_TLS_CA_PATH: ca.certFile })).toEqual([
      'TEMPORAL_TLS_CA and TEMPORAL_TLS_CA_PATH: set one of them, not both',
    ]);
    expect(problems({ TEMPORAL_TLS: 'false', TEMPORAL_TLS_CA_PATH: ca.certFile })).toEqual([
      'TEMPORAL_TLS=false: remove the TEMPORAL_TLS_* certificate and server name settings, or the line',
    ]);
  });

  it('an expired client certificate is a start-up error, not a handshake failure later', () => {
    // Signed by the test CA for one day in 2020 (`openssl ca`: the one openssl 3.0 command that sets past dates).
    const cert = path.join(dir, 'old.pem');
    const request = path.join(dir, 'old.csr');
    const caConfig = path.join(dir, 'ca.cnf');
    writeFileSync(path.join(dir, 'index.txt'), '');
    writeFileSync(path.join(dir, 'serial'), '01\n');
    writeFileSync(
      caConfig,
      `[ca]\ndefault_ca = d\n[d]\ndatabase = ${dir}/index.txt\nnew_certs_dir = ${dir}\nserial = ${dir}/serial\n` +
        'default_md = sha256\npolicy = p\n[p]\ncommonName = supplied\n'
    );
    const openssl = (...args: string[]): void => void execFileSync('openssl', args, { stdio: 'ignore' });
    openssl('req', '-new', '-key', client.keyFile, '-out', request, '-subj', '/CN=old');
    openssl(
      ...['ca', '-batch', '-config', caConfig, '-cert', ca.certFile, '-keyfile', ca.keyFile, '-in', request],
      ...['-out', cert, '-startdate', '20200101000000Z', '-enddate', '20200102000000Z']
    );
    expect(problems({ TEMPORAL_TLS_CERT_PATH: cert, TEMPORAL_TLS_KEY_PATH: client.keyFile })).toEqual([
      'TEMPORAL_TLS_CERT_PATH: the certificate expired on Jan  2 00:00:00 2020 GMT',
    ]);
  });
});

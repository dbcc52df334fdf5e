/**
 * The Temporal connection's TLS settings, read and validated for lib/config.ts `loadConfig` (the only reader of the
 * environment, which hands each variable in through `get`): TEMPORAL_TLS_CERT / _KEY / _CA as PEM text or as files
 * (`_PATH`), TEMPORAL_TLS_SERVER_NAME, TEMPORAL_TLS [docs/decisions.md "Temporal connection"]. Every problem is
 * recorded, so start-up names them all at once.
 */
import { createPrivateKey, X509Certificate, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';

type Get = (name: string) => string | undefined;

/** TLS options of the Temporal connection, validated: PEM bytes, the key belongs to the certificate. */
export interface TemporalTls {
  /** The name the server's certificate must carry, when it is not the address's host (TEMPORAL_TLS_SERVER_NAME). */
  serverNameOverride?: string;
  /** CA certificate(s) that signed the server's certificate; unset: the system's trust store. */
  serverRootCACertificate?: Buffer;
  /** The client certificate and its key (mTLS). */
  clientCertPair?: { crt: Buffer; key: Buffer };
}

/**
 * Reads one PEM item of the Temporal TLS settings: `<name>` holds the PEM text itself, `<name>_PATH` a file.
 * @returns the bytes, or undefined when neither is set (or on a problem, which is recorded).
 */
function pemSetting(get: Get, name: string, problems: string[]): { value: Buffer; from: string } | undefined {
  const inline = get(name);
  const file = get(`${name}_PATH`);
  if (inline !== undefined && file !== undefined) {
    problems.push(`${name} and ${name}_PATH: set one of them, not both`);
    return undefined;
  }
  if (inline !== undefined) {
    if (!inline.includes('-----BEGIN ')) {
      problems.push(`${name}: must hold PEM text (-----BEGIN …); for a file use ${name}_PATH`);
      return undefined;
    }
    return { value: Buffer.from(inline.replace(/\\n/g, '\n')), from: name };
  }
  if (file === undefined) return undefined;
  try {
    return { value: readFileSync(path.resolve(file)), from: `${name}_PATH` };
  } catch (err) {
    problems.push(`${name}_PATH=${JSON.stringify(file)}: cannot read it (${(err as NodeJS.ErrnoException).code})`);
    return undefined;
  }
}

/**
 * The Temporal TLS settings, validated (each certificate parses and is within its validity, the key parses and
 * belongs to the certificate, a certificate and a key come together).
 * @param get reads a variable (trimmed; undefined when unset or blank).
 * @param problems where problems are recorded.
 * @returns the TLS options, or undefined for plaintext.
 */
export function temporalTls(get: Get, problems: string[]): TemporalTls | undefined {
  const cert = pemSetting(get, 'TEMPORAL_TLS_CERT', problems);
  const key = pemSetting(get, 'TEMPORAL_TLS_KEY', problems);
  const ca = pemSetting(get, 'TEMPORAL_TLS_CA', problems);
  const serverName = get('TEMPORAL_TLS_SERVER_NAME');
  const forced = get('TEMPORAL_TLS');
  if (forced !== undefined && !/^(true|false)$/i.test(forced)) {
    problems.push(`TEMPORAL_TLS=${JSON.stringify(forced)}: must be true or false`);
  }
  const given = (name: string): string | undefined =>
    get(name) !== undefined ? name : get(`${name}_PATH`) !== undefined ? `${name}_PATH` : undefined;
  const certGiven = given('TEMPORAL_TLS_CERT');
  const keyGiven = given('TEMPORAL_TLS_KEY');
  if ((certGiven === undefined) !== (keyGiven === undefined)) {
    problems.push(
      `TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY (or their _PATH forms): set both for mTLS, or neither (only ${certGiven ?? keyGiven} is set)`
    );
  }
  const now = Date.now();
  const certificate = (item: { value: Buffer; from: string }): X509Certificate | undefined => {
    try {
      const x509 = new X509Certificate(item.value);
      if (Date.parse(x509.validTo) < now) problems.push(`${item.from}: the certificate expired on ${x509.validTo}`);
      else if (Date.parse(x509.validFrom) > now)
        problems.push(`${item.from}: the certificate is valid only from ${x509.validFrom}`);
      return x509;
    } catch {
      problems.push(`${item.from}: not a PEM certificate`);
      return undefined;
    }
  };
  const clientCert = cert && certificate(cert);
  if (ca) certificate(ca);
  let privateKey: KeyObject | undefined;
  if (key) {
    try {
      privateKey = createPrivateKey(key.value);
    } catch {
      problems.push(`${key.from}: not a PEM private key (unencrypted PKCS#8, PKCS#1 or SEC1)`);
    }
  }
  if (clientCert && privateKey && !clientCert.checkPrivateKey(privateKey)) {
    problems.push(`${cert!.from} and ${key!.from}: the key does not belong to the certificate`);
  }
  const off = forced !== undefined && /^false$/i.test(forced);
  if (off) {
    if (cert || key || ca || serverName)
      problems.push('TEMPORAL_TLS=false: remove the TEMPORAL_TLS_* certificate and server name settings, or the line');
    return undefined;
  }
  const on = Boolean(cert || key || ca || serverName || get('TEMPORAL_API_KEY')) || /^true$/i.test(forced ?? '');
  if (!on) return undefined;
  return {
    ...(serverName ? { serverNameOverride: serverName } : {}),
    ...(ca ? { serverRootCACertificate: ca.value } : {}),
    ...(cert && key ? { clientCertPair: { crt: cert.value, key: key.value } } : {}),
  };
}

/**
 * MongoDB over TLS is configured through the connection string alone (docs/operations.md "Production": MongoDB Atlas): the
 * service hands MONGODB_URI to the driver as it is, so its TLS options (`tls`, `tlsCAFile`,
 * `tlsCertificateKeyFile`) apply. Proven with the real test server behind a TLS frontend made in the test (which
 * requires a client certificate from the test's CA), reached by the admin CLI's `check` as an operator would.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { certificateAuthority } from '../../scripts/fakes/certificate';
import { childTestEnv } from '../helpers/env';
import { useTestDatabase } from '../helpers/mongo';
import { runScriptAsync } from '../helpers/processes';

const db = useTestDatabase();
const dir = mkdtempSync(path.join(os.tmpdir(), 'aas-mongotls-'));
const ca = certificateAuthority(dir, 'mongo-ca');
const serverCert = ca.issue('mongo', 'server', ['DNS:localhost', 'IP:127.0.0.1']);
const clientCert = ca.issue('service', 'client');
/** The driver reads the client certificate and its key from one file. */
const clientPem = path.join(dir, 'service-bundle.pem');
writeFileSync(clientPem, Buffer.concat([clientCert.cert, clientCert.key]));

let frontend: tls.Server;
let port = 0;
beforeAll(async () => {
  const upstream = new URL(db.uri);
  frontend = tls.createServer(
    { cert: serverCert.cert, key: serverCert.key, ca: ca.cert, requestCert: true, rejectUnauthorized: true },
    (socket) => {
      const plain = net.connect(Number(upstream.port), upstream.hostname);
      socket.pipe(plain).pipe(socket);
      socket.on('error', () => plain.destroy());
      plain.on('error', () => socket.destroy());
    }
  );
  frontend.on('tlsClientError', () => undefined);
  await new Promise<void>((resolve) => frontend.listen(0, '127.0.0.1', resolve));
  port = (frontend.address() as net.AddressInfo).port;
});
afterAll(async () => new Promise<void>((resolve) => frontend.close(() => resolve())));

const check = (uri: string): ReturnType<typeof runScriptAsync> =>
  runScriptAsync('scripts/admin.ts', ['check'], childTestEnv({ MONGODB_URI: uri, DEPENDENCY_TIMEOUT_MS: '2000' }));

describe('MongoDB over TLS through MONGODB_URI', () => {
  const base = (): string => `mongodb://127.0.0.1:${port}/${db.dbName}?directConnection=true&tls=true`;

  it('a URI with tls, tlsCAFile and tlsCertificateKeyFile connects (mutual TLS)', async () => {
    const res = await check(`${base()}&tlsCAFile=${ca.certFile}&tlsCertificateKeyFile=${clientPem}`);
    expect(res.stderr).toBe('');
    expect(res.status).toBe(0);
    expect(JSON.parse(res.stdout)).toMatchObject({ mongodb: { ok: true } });
  });

  it('without the CA the server is not trusted; without the client certificate the server refuses', async () => {
    const untrusted = await check(`${base()}&tlsCertificateKeyFile=${clientPem}`);
    expect(untrusted.status).toBe(1);
    expect(untrusted.stderr).toMatch(/^admin: .*(certificate|self[- ]signed)/i);
    const anonymous = await check(`${base()}&tlsCAFile=${ca.certFile}`);
    expect(anonymous.status).toBe(1);
    expect(anonymous.stderr).toMatch(/^admin: /);
  });
});

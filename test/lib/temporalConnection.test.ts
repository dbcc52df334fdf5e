/**
 * The Temporal connection settings (TLS, mTLS, server name, API key) reach the engine from the api's client, the
 * worker and the admin CLI alike (lib/temporal.ts `temporalConnectionOptions`): the real dev server behind a TLS
 * frontend made in the test, which requires a client certificate from the test's own CA and serves a certificate
 * for `temporal.test` only (so the connection must name it: TEMPORAL_TLS_SERVER_NAME).
 */
import { mkdtempSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { certificateAuthority } from '../../scripts/fakes/certificate';
import { childTestEnv } from '../helpers/env';
import { buildOrg } from '../helpers/factories';
import { useTestDatabase } from '../helpers/mongo';
import { runScriptAsync, spawnScript } from '../helpers/processes';
import { startTlsFrontend, type TlsFrontend } from '../helpers/tlsFrontend';
import { v1As } from '../helpers/v1';
import { useExecutionStack } from '../helpers/worker';

const db = useTestDatabase();
const dir = mkdtempSync(path.join(os.tmpdir(), 'aas-tls-'));
const ca = certificateAuthority(dir, 'temporal-ca');
const serverCert = ca.issue('frontend', 'server', ['DNS:temporal.test']);
const clientCert = ca.issue('service', 'client');
const rogueCa = certificateAuthority(dir, 'rogue-ca');
const rogueClient = rogueCa.issue('intruder', 'client');

let frontend: TlsFrontend;
/** The service's settings for the TLS frontend (filled before the stack starts). */
const tls: Record<string, string> = {};
beforeAll(async () => {
  frontend = await startTlsFrontend(
    { cert: serverCert.cert, key: serverCert.key, clientCa: ca.cert },
    process.env.TEMPORAL_ADDRESS!
  );
  Object.assign(tls, {
    TEMPORAL_ADDRESS: frontend.address,
    TEMPORAL_TLS_CA_PATH: ca.certFile,
    TEMPORAL_TLS_CERT_PATH: clientCert.certFile,
    TEMPORAL_TLS_KEY_PATH: clientCert.keyFile,
    TEMPORAL_TLS_SERVER_NAME: 'temporal.test',
    TEMPORAL_API_KEY: 'test-api-key',
  });
});
const stack = useExecutionStack('tls', tls);
afterAll(async () => frontend?.close());

/** A worker process with the TLS settings and `overrides` on top; resolves with its exit and output. */
async function workerWith(overrides: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const worker = spawnScript('worker/index.ts', childTestEnv({ MONGODB_URI: db.uri, ...tls, ...overrides }));
  const { code } = await worker.exited();
  return { code, output: worker.output() };
}

describe('Temporal over TLS', () => {
  it('an execution started by the api and run by the worker, both over mTLS with an API key, completes', async () => {
    const org = await buildOrg();
    const as = v1As(stack.t, org.apiToken);
    const agent = await as.post('/agents', { name: 'Echo', systemPrompt: 'Be brief.' });
    const res = await as.post(`/agents/${agent.body.id}/execute`, { message: 'over TLS' });
    expect(res.status).toBe(200);
    expect(res.body.result).toBe('Echo: over TLS');

    // The api's client started the workflow and the worker polled its task queue, both through the frontend,
    // each call with the verified client certificate and the API key.
    const paths = frontend.calls.map((c) => c.path.split('/').at(-1));
    expect(paths).toEqual(expect.arrayContaining(['StartWorkflowExecution', 'PollWorkflowTaskQueue']));
    expect(frontend.calls.every((c) => c.clientCertificate && c.authorization === 'Bearer test-api-key')).toBe(true);
  });

  it('the admin CLI reaches the namespace with the same settings', async () => {
    const res = await runScriptAsync('scripts/admin.ts', ['check'], childTestEnv({ MONGODB_URI: db.uri, ...tls }));
    expect(res.stderr).toBe('');
    expect(res.status).toBe(0);
    // `admin check` also verifies the indexes and the search attributes (issue 42 point 7), through the same settings.
    expect(JSON.parse(res.stdout)).toEqual({
      mongodb: { ok: true, indexes: expect.any(Number) },
      temporal: {
        address: frontend.address,
        namespace: 'default',
        security: 'mTLS',
        apiKey: true,
        searchAttributes: ['OrganizationId', 'AgentId', 'WorkKind'],
      },
    });
  });

  it('a client certificate the frontend does not trust stops the worker at start with a clear error', async () => {
    const { code, output } = await workerWith({
      TEMPORAL_TLS_CERT_PATH: rogueClient.certFile,
      TEMPORAL_TLS_KEY_PATH: rogueClient.keyFile,
    });
    expect(code).toBe(1);
    expect(output).toContain(
      `cannot connect to Temporal at ${frontend.address} (mTLS, API key, server name temporal.test): `
    );
    expect(output).toContain('the server may have refused the client certificate (TEMPORAL_TLS_CERT)');
  });

  it('a frontend whose certificate the configured CA did not sign stops the worker at start', async () => {
    const { code, output } = await workerWith({ TEMPORAL_TLS_CA_PATH: rogueCa.certFile });
    expect(code).toBe(1);
    expect(output).toContain(
      "the server's certificate is not signed by TEMPORAL_TLS_CA (or, without it, by a CA the system trusts)"
    );
  });

  it('a certificate without its key is a start-up error naming both, before anything connects', async () => {
    const { code, output } = await workerWith({ TEMPORAL_TLS_KEY_PATH: '' });
    expect(code).toBe(1);
    expect(output).toContain(
      'config error: TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY (or their _PATH forms): set both for mTLS, or neither (only TEMPORAL_TLS_CERT_PATH is set)'
    );
  });
});

/**
 * MCP clients for the tests: the official SDK's Client and StreamableHTTPClientTransport, authenticating the way
 * an off-the-shelf client does (discovery from the 401, then client credentials or authorization code + PKCE).
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import { createHash, randomBytes } from 'node:crypto';
import { bearer } from './factories';

/** Where the tests' clients of people are sent back to (nothing listens there: the tests read the redirect). */
export const TEST_REDIRECT = 'http://127.0.0.1:9/callback';

export interface MachineClient {
  client_id: string;
  client_secret: string;
}

/**
 * Registers a machine client (client credentials) with a service token (RFC 7591 with an initial access token).
 * @param base the service's address.
 * @param serviceToken a service token with scope mcp or `*`.
 * @returns the client's credentials.
 */
export async function registerMachineClient(base: string, serviceToken: string): Promise<MachineClient> {
  const res = await fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { authorization: bearer(serviceToken), 'content-type': 'application/json' },
    body: JSON.stringify({ client_name: 'test machine', grant_types: ['client_credentials'] }),
  });
  if (res.status !== 201) throw new Error(`registration: ${res.status} ${await res.text()}`);
  return (await res.json()) as MachineClient;
}

/**
 * @param base the service's address (APP_URL).
 * @param creds a machine client's credentials.
 * @returns a connected SDK client (it discovered the authorization server from the 401 and got a token).
 */
export async function connectMachine(base: string, creds: MachineClient): Promise<Client> {
  const provider = new ClientCredentialsProvider({
    clientId: creds.client_id,
    clientSecret: creds.client_secret,
    expectedIssuer: base,
  });
  const client = new Client({ name: 'test-machine', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), { authProvider: provider }));
  return client;
}

/**
 * @param base the service's address.
 * @param token a bearer token (an access token or a service token).
 * @param sessionId an existing session to continue (no initialize).
 * @returns a connected SDK client sending that token.
 */
export async function connectWithToken(base: string, token: string, sessionId?: string): Promise<Client> {
  const client = new Client({ name: 'test-token', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
      requestInit: { headers: { authorization: bearer(token) } },
      sessionId,
    })
  );
  return client;
}

/**
 * A person's client: dynamic registration, then authorization code + PKCE; the "browser" opens the consent page
 * and approves with the person's service token, and the redirect's code is kept for finishAuth.
 */
export class PkceProvider implements OAuthClientProvider {
  readonly redirectUrl = TEST_REDIRECT;
  private info: OAuthClientInformationMixed | undefined;
  private saved: OAuthTokens | undefined;
  private verifier = '';
  /** The code the authorization redirect carried. */
  code: string | undefined;
  /** The consent page's HTML, as the person saw it. */
  consentPage = '';

  constructor(
    private readonly personToken: string,
    private readonly decision: 'approve' | 'deny' = 'approve'
  ) {}

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'test person client',
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }
  clientInformation(): OAuthClientInformationMixed | undefined {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed): void {
    this.info = info;
  }
  tokens(): OAuthTokens | undefined {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens): void {
    this.saved = tokens;
  }
  saveCodeVerifier(verifier: string): void {
    this.verifier = verifier;
  }
  codeVerifier(): string {
    return this.verifier;
  }
  async redirectToAuthorization(url: URL): Promise<void> {
    const consent = await fetch(url);
    this.consentPage = await consent.text();
    if (consent.status !== 200) throw new Error(`consent page: ${consent.status} ${this.consentPage}`);
    const form = new URLSearchParams(url.searchParams);
    form.set('service_token', this.personToken);
    form.set('decision', this.decision);
    const res = await fetch(new URL('/oauth/authorize', url), {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: form.toString(),
      redirect: 'manual',
    });
    const location = res.headers.get('location');
    if (res.status !== 303 || !location) throw new Error(`authorize: ${res.status} ${await res.text()}`);
    this.code = new URL(location).searchParams.get('code') ?? undefined;
  }
}

/**
 * Connects as a person: the first connect is refused (401), the provider runs the consent, and the code is
 * exchanged; the second connect succeeds.
 * @param base the service's address (APP_URL).
 * @param provider the person's provider.
 * @returns a connected SDK client.
 */
export async function connectPerson(base: string, provider: PkceProvider): Promise<Client> {
  const url = new URL(`${base}/mcp`);
  const first = new StreamableHTTPClientTransport(url, { authProvider: provider });
  await expect(new Client({ name: 'test-person', version: '1.0.0' }).connect(first)).rejects.toThrow(/Unauthorized/i);
  if (!provider.code) throw new Error('no authorization code');
  await first.finishAuth(provider.code);
  const client = new Client({ name: 'test-person', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(url, { authProvider: provider }));
  return client;
}

/**
 * Posts a form to the authorization server (authorize, token, revoke), not following redirects.
 * @param base the service's address.
 * @param path the endpoint's path.
 * @param fields the form's fields.
 * @param headers more headers (client authentication).
 * @returns the response.
 */
export function postForm(
  base: string,
  path: string,
  fields: Record<string, string>,
  headers: Record<string, string> = {}
): Promise<Response> {
  return fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(fields).toString(),
    redirect: 'manual',
  });
}

/**
 * Dynamic client registration (RFC 7591).
 * @param base the service's address.
 * @param body the client's metadata.
 * @param headers more headers (an initial access token).
 * @returns the response.
 */
export function registerClient(base: string, body: object, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`${base}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
}

/** @returns a PKCE verifier and its S256 challenge. */
export function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/**
 * Whether the MCP endpoint takes a token: it ends an unknown session with it.
 * @param base the service's address.
 * @param token a bearer token.
 * @returns 404 when the token is taken (only the session is unknown), 401 when it is refused.
 */
export async function mcpStatus(base: string, token: string): Promise<number> {
  const res = await fetch(`${base}/mcp`, {
    method: 'DELETE',
    headers: { authorization: bearer(token), 'mcp-session-id': 'mcps_none' },
  });
  return res.status;
}

/**
 * A person's public client and their consent: registers a client (PKCE, no secret), then approves its
 * authorization request with the person's service token, as the consent page does.
 * @param base the service's address.
 * @param personToken the person's service token (scope mcp).
 * @param options the client's name and the request's state, when the test wants them.
 * @returns the registration's answer, the client's id, the PKCE verifier, and the authorization endpoint's answer
 *   (its redirect carries the code).
 */
export async function consentedClient(
  base: string,
  personToken: string,
  options: { clientName?: string; state?: string } = {}
): Promise<{ registration: Response; clientId: string; verifier: string; answer: Response }> {
  const registration = await registerClient(base, {
    redirect_uris: [TEST_REDIRECT],
    token_endpoint_auth_method: 'none',
    ...(options.clientName !== undefined ? { client_name: options.clientName } : {}),
  });
  const { client_id: clientId } = (await registration.json()) as { client_id: string };
  const { verifier, challenge } = pkce();
  const answer = await postForm(base, '/oauth/authorize', {
    response_type: 'code',
    client_id: clientId,
    redirect_uri: TEST_REDIRECT,
    code_challenge: challenge,
    code_challenge_method: 'S256',
    ...(options.state !== undefined ? { state: options.state } : {}),
    scope: 'mcp',
    service_token: personToken,
    decision: 'approve',
  });
  return { registration, clientId, verifier, answer };
}

/**
 * Redeems an authorization code at the token endpoint (a public client: the PKCE verifier, no secret).
 * @param base the service's address.
 * @param clientId the client.
 * @param code the code.
 * @param verifier its PKCE verifier.
 * @returns the token endpoint's answer.
 */
export function exchangeCode(base: string, clientId: string, code: string, verifier: string): Promise<Response> {
  return postForm(base, '/oauth/token', {
    grant_type: 'authorization_code',
    client_id: clientId,
    code,
    code_verifier: verifier,
    redirect_uri: TEST_REDIRECT,
  });
}

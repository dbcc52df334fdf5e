/**
 * A real OpenID Connect provider for the identity tests: `oidc-provider` on 127.0.0.1 with its own RSA keys and its
 * development login pages, in a process of its own (test/helpers/identityProviderServer.ts). The test can rotate the
 * provider's keys (a new signing key first, the old ones still published), sign tokens with the provider's keys or
 * with a stranger's, and run the authorization code flow (PKCE) over HTTP as a browser would, for an ID token the
 * provider mints itself.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import type { ClientMetadata } from 'oidc-provider';
import { ROOT } from './processes';

/** A signing key: its id, its private key (for tokens the test signs) and its private JWK (the provider's). */
export interface TestKey {
  kid: string;
  privateKey: Awaited<ReturnType<typeof generateKeyPair>>['privateKey'];
  jwk: JWK;
}

export interface TestIdp {
  issuer: string;
  /** The provider's keys, the signing one first. */
  keys: TestKey[];
  /** Signs an ID token with `key` (default: the provider's signing key); `iat` now, `exp` in an hour, unless given. */
  sign(claims: JWTPayload, key?: TestKey): Promise<string>;
  /** Puts a new signing key first (the old ones stay published). */
  rotate(): Promise<TestKey>;
  /** Registers these clients instead (e.g. once the service's address, its redirect URI, is known). */
  setClients(clients: ClientMetadata[]): Promise<void>;
  /** The authorization code flow with PKCE, through the development login and consent pages: the ID token. */
  idTokenByFlow(clientId: string, redirectUri: string, login: string): Promise<string>;
  /**
   * A browser at the provider: from an authorization URL through the login (as `login`) and consent pages, to the
   * first address outside the provider (the client's redirect URI with `code` or `error`).
   */
  signInAt(authorizationUrl: string, login: string): Promise<string>;
  close(): Promise<void>;
}

/** @returns a new RS256 key that no provider publishes yet. */
export async function newKey(): Promise<TestKey> {
  const { privateKey } = await generateKeyPair('RS256', { extractable: true });
  const kid = `k-${randomBytes(6).toString('hex')}`;
  return { kid, privateKey, jwk: { ...(await exportJWK(privateKey)), kid, alg: 'RS256', use: 'sig' } };
}

/** The provider's next report (its issuer and keys). */
function report(child: ChildProcess): Promise<{ issuer: string }> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`the identity provider exited (${code})`));
    child.once('exit', onExit);
    child.once('message', (m) => {
      child.off('exit', onExit);
      resolve(m as { issuer: string });
    });
  });
}

/**
 * Starts the provider.
 * @param clients the clients registered at it.
 * @returns the provider.
 */
export async function startTestIdp(clients: ClientMetadata[]): Promise<TestIdp> {
  const keys: TestKey[] = [await newKey()];
  const child = fork(path.join(ROOT, 'test', 'helpers', 'identityProviderServer.ts'), [], {
    cwd: ROOT,
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, IDP_CLIENTS: JSON.stringify(clients), IDP_KEYS: JSON.stringify(keys.map((k) => k.jwk)) },
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  // The library's start-up notices (development adapter and pages) are left out; its server errors are shown.
  child.stderr!.on('data', (d: Buffer) => {
    for (const line of d.toString().split('\n')) if (line.startsWith('[idp]')) process.stderr.write(`${line}\n`);
  });
  const { issuer } = await report(child);

  const sign = (claims: JWTPayload, key: TestKey = keys[0]): Promise<string> => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ iat: now, exp: now + 3600, iss: issuer, ...claims })
      .setProtectedHeader({ alg: 'RS256', kid: key.kid, typ: 'JWT' })
      .sign(key.privateKey);
  };

  const signInAt = async (authorizationUrl: string, login: string): Promise<string> => {
    const jar = new Map<string, string>();
    const go = async (url: string, body?: Record<string, string>): Promise<Response> => {
      const res = await fetch(url, {
        method: body ? 'POST' : 'GET',
        redirect: 'manual',
        headers: {
          cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; '),
          ...(body ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body: body ? new URLSearchParams(body).toString() : undefined,
      });
      for (const c of res.headers.getSetCookie()) {
        const [pair] = c.split(';');
        const at = pair.indexOf('=');
        jar.set(pair.slice(0, at), pair.slice(at + 1));
      }
      return res;
    };
    let url = authorizationUrl;
    for (let hop = 0; hop < 12; hop++) {
      if (!url.startsWith(`${issuer}/`)) return url;
      let res = await go(url);
      if (res.status === 200) {
        // A development interaction page: sign in as `login`, or consent.
        const page = await res.text();
        const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
        res = await go(url, prompt === 'login' ? { prompt, login, password: 'x' } : { prompt: prompt ?? 'consent' });
      }
      const location = res.headers.get('location');
      if (!location) throw new Error(`the provider answered ${res.status} at ${url}: ${await res.text()}`);
      url = new URL(location, url).toString();
    }
    throw new Error('too many redirects');
  };

  const idTokenByFlow = async (clientId: string, redirectUri: string, login: string): Promise<string> => {
    const verifier = randomBytes(32).toString('base64url');
    const back = await signInAt(
      `${issuer}/auth?${new URLSearchParams({
        client_id: clientId,
        response_type: 'code',
        redirect_uri: redirectUri,
        scope: 'openid email',
        nonce: randomBytes(16).toString('base64url'),
        state: 'flow',
        code_challenge: createHash('sha256').update(verifier).digest('base64url'),
        code_challenge_method: 'S256',
      })}`,
      login
    );
    const code = new URL(back).searchParams.get('code');
    if (!back.startsWith(redirectUri) || !code) throw new Error(`the provider sent back no code: ${back}`);
    const token = await fetch(`${issuer}/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        code,
        redirect_uri: redirectUri,
        code_verifier: verifier,
        client_id: clientId,
      }).toString(),
    });
    const answer = (await token.json()) as { id_token?: string };
    if (!answer.id_token) throw new Error(`no ID token: ${JSON.stringify(answer)}`);
    return answer.id_token;
  };

  return {
    issuer,
    keys,
    sign,
    async rotate() {
      const key = await newKey();
      const reported = report(child);
      child.send({ rotate: key.jwk });
      await reported;
      keys.unshift(key);
      return key;
    },
    async setClients(list) {
      const reported = report(child);
      child.send({ clients: list });
      await reported;
    },
    idTokenByFlow,
    signInAt,
    close: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

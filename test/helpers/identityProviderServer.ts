/**
 * A real OpenID Connect provider (`oidc-provider`) for the identity tests, in a process of its own (the library ships
 * ES modules only; the test process is CommonJS under jest): started by test/helpers/oidcProvider.ts through `fork`,
 * it listens on 127.0.0.1 and reports `{issuer, keys}` (its private JWKs, the signing key first) over IPC. A
 * `{rotate: <private JWK>}` message builds the provider again with that key first and the old ones still published
 * (a key rotation), a `{clients: [...]}` message with those clients; each reports again.
 *
 * Its development login pages sign in any login name: the account's `sub` is that name, and its verified `email`
 * too when the name is an email address. Clients: JSON in IDP_CLIENTS.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider, { type ClientMetadata } from 'oidc-provider';

type Jwk = Record<string, unknown>;

let clients = JSON.parse(process.env.IDP_CLIENTS ?? '[]') as ClientMetadata[];
const keys: Jwk[] = JSON.parse(process.env.IDP_KEYS ?? '[]') as Jwk[];
let handler: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end();
const server = http.createServer((req, res) => handler(req, res));

function build(issuer: string): void {
  const provider = new Provider(issuer, {
    clients,
    jwks: { keys },
    cookies: { keys: ['identity-test-cookie-key'] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    conformIdTokenClaims: false,
    features: { devInteractions: { enabled: true } },
    findAccount: (_ctx, sub) => ({
      accountId: sub,
      claims: () => ({ sub, ...(sub.includes('@') ? { email: sub, email_verified: true } : {}) }),
    }),
  });
  provider.on('server_error', (_ctx, err) => process.stderr.write(`[idp] ${String(err)}\n`));
  handler = provider.callback();
}

server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  build(issuer);
  process.send?.({ issuer, keys });
  process.on('message', (message: { rotate?: Jwk; clients?: ClientMetadata[] }) => {
    if (message.rotate) keys.unshift(message.rotate);
    if (message.clients) clients = message.clients;
    build(issuer);
    process.send?.({ issuer, keys });
  });
  process.on('disconnect', () => process.exit(0));
});

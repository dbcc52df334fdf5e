/**
 * OpenID Connect ID tokens of the configured identity providers (docs/identity.md): each issuer's discovery
 * document (`<issuer>/.well-known/openid-configuration`, read once and kept; a failed read is retried at the next
 * token), its JWKS through jose's remote key set (kept; a token naming a key not in it fetches the JWKS again, at most
 * once per OIDC_JWKS_COOLDOWN: that is how a provider's key rotation is followed), and the checks of an ID token
 * (OpenID Connect Core §3.1.3.7): signature by a key of the issuer's JWKS with an asymmetric algorithm, `iss` a
 * configured issuer, `aud` one of its audiences (and `azp`, when several), `exp` and `iat` within the allowed clock
 * skew, `sub` present, and `nonce` when the caller expects one (the console's sign-in).
 */
import {
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import type { OidcConfig, OidcIssuer } from './config';

/** What an issuer's discovery document says that the service uses. */
export interface ProviderMetadata {
  issuer: string;
  jwks_uri: string;
  authorization_endpoint?: string;
  token_endpoint?: string;
}

/** The claims of a verified ID token the service reads. */
export interface IdTokenClaims extends JWTPayload {
  iss: string;
  sub: string;
  email?: string;
  email_verified?: boolean;
  nonce?: string;
}

/**
 * Why an ID token was refused: `malformed` (not a JWT), `issuer` (not a configured issuer), `audience`, `expired`
 * (or not yet valid), `unknown_key` (no key of the issuer's JWKS, even fetched again, has its `kid`), `signature`
 * (bad signature, algorithm not allowed, a required claim missing), `nonce`, `unavailable` (the provider's discovery
 * document or JWKS cannot be read).
 */
export type IdTokenRefusal =
  'malformed' | 'issuer' | 'audience' | 'expired' | 'unknown_key' | 'signature' | 'nonce' | 'unavailable';

/** Asymmetric algorithms only: a provider's ID tokens are never checked with a shared secret. */
const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
/** The longest wait for a discovery document or a JWKS. */
const FETCH_TIMEOUT_MS = 5000;
/** The largest ID token looked at. */
const MAX_TOKEN_LENGTH = 16 * 1024;

/** The identity providers of one configuration, with their discovery documents and key sets. */
export class IdentityProviders {
  private readonly metadata = new Map<string, Promise<ProviderMetadata>>();
  private readonly keySets = new Map<string, JWTVerifyGetKey>();

  constructor(readonly config: Readonly<OidcConfig>) {}

  /** @returns whether any issuer is configured. */
  get enabled(): boolean {
    return this.config.issuers.length > 0;
  }

  /**
   * @param issuer an issuer identifier.
   * @returns its configuration, or undefined when it is not configured.
   */
  issuer(issuer: string): OidcIssuer | undefined {
    return this.config.issuers.find((i) => i.issuer === issuer);
  }

  /**
   * The issuer's discovery document (OpenID Connect Discovery §4), read once; a failed read is not kept.
   * @param issuer a configured issuer.
   * @returns its metadata.
   * @throws Error when it cannot be read or names another issuer.
   */
  discover(issuer: string): Promise<ProviderMetadata> {
    let found = this.metadata.get(issuer);
    if (!found) {
      found = readMetadata(issuer);
      this.metadata.set(issuer, found);
      found.catch(() => this.metadata.delete(issuer));
    }
    return found;
  }

  private async keySet(issuer: string): Promise<JWTVerifyGetKey> {
    const known = this.keySets.get(issuer);
    if (known) return known;
    const { jwks_uri } = await this.discover(issuer);
    const keys = createRemoteJWKSet(new URL(jwks_uri), {
      cooldownDuration: this.config.jwksCooldownMs,
      timeoutDuration: FETCH_TIMEOUT_MS,
    });
    this.keySets.set(issuer, keys);
    return keys;
  }

  /**
   * Verifies an ID token.
   * @param token the compact JWT.
   * @param expect `nonce`: the nonce the token must carry; `issuer`: the only issuer accepted; `audience`: the only
   *   audience accepted (else any of its issuer's).
   * @returns its claims, or why it was refused.
   */
  async verify(
    token: string,
    expect: { nonce?: string; issuer?: string; audience?: string } = {}
  ): Promise<IdTokenClaims | IdTokenRefusal> {
    if (token.length > MAX_TOKEN_LENGTH) return 'malformed';
    let unverified: JWTPayload;
    try {
      decodeProtectedHeader(token);
      unverified = decodeJwt(token);
    } catch {
      return 'malformed';
    }
    const configured = typeof unverified.iss === 'string' ? this.issuer(unverified.iss) : undefined;
    if (!configured || (expect.issuer !== undefined && configured.issuer !== expect.issuer)) return 'issuer';
    const audiences = expect.audience !== undefined ? [expect.audience] : configured.audiences;
    let keys: JWTVerifyGetKey;
    try {
      keys = await this.keySet(configured.issuer);
    } catch {
      return 'unavailable';
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys, {
        issuer: configured.issuer,
        audience: audiences,
        algorithms: ALGORITHMS,
        clockTolerance: this.config.clockToleranceSeconds,
        requiredClaims: ['sub', 'exp', 'iat'],
      }));
    } catch (err) {
      return refusal(err);
    }
    // OpenID Connect Core §3.1.3.7 (4, 5): with several audiences, the authorized party must be ours.
    if (Array.isArray(payload.aud) && payload.aud.length > 1 && !audiences.includes(payload.azp as string))
      return 'audience';
    if (typeof payload.sub !== 'string' || payload.sub === '' || payload.sub.length > 255) return 'signature';
    if (expect.nonce !== undefined && payload.nonce !== expect.nonce) return 'nonce';
    return payload as IdTokenClaims;
  }
}

function refusal(err: unknown): IdTokenRefusal {
  if (err instanceof errors.JWTExpired) return 'expired';
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.reason === 'missing') return 'signature';
    if (err.claim === 'aud') return 'audience';
    if (err.claim === 'iss') return 'issuer';
    if (err.claim === 'nbf' || err.claim === 'iat') return 'expired';
    return 'signature';
  }
  if (err instanceof errors.JWKSNoMatchingKey) return 'unknown_key';
  if (err instanceof errors.JWKSTimeout) return 'unavailable';
  if (err instanceof errors.JOSEError) return 'signature';
  return 'unavailable'; // the JWKS could not be fetched
}

async function readMetadata(issuer: string): Promise<ProviderMetadata> {
  const res = await fetch(`${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`, {
    signal: AbortSignal.timeout(FETCH_TIMEOUT_MS),
    redirect: 'error',
    headers: { accept: 'application/json' },
  });
  if (!res.ok) throw new Error(`discovery of ${issuer}: HTTP ${res.status}`);
  const body = (await res.json()) as Partial<ProviderMetadata>;
  // OpenID Connect Discovery §4.3: the document's issuer must be the one asked about.
  if (body.issuer !== issuer) throw new Error(`discovery of ${issuer}: it names the issuer ${String(body.issuer)}`);
  if (typeof body.jwks_uri !== 'string') throw new Error(`discovery of ${issuer}: no jwks_uri`);
  return body as ProviderMetadata;
}

const perConfig = new WeakMap<Readonly<OidcConfig>, IdentityProviders>();

/**
 * @param config the identity providers' configuration.
 * @returns the one IdentityProviders of this configuration (its key sets are shared by the routes of an app).
 */
export function identityProviders(config: Readonly<OidcConfig>): IdentityProviders {
  let found = perConfig.get(config);
  if (!found) {
    found = new IdentityProviders(config);
    perConfig.set(config, found);
  }
  return found;
}

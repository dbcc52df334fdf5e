/**
 * Signed URLs of the job event streams for embedded MCP app surfaces (`/mcp-app/jobs/{jobId}/events`): an app
 * rendered by an MCP client has no bearer token, so an authenticated call hands it a URL whose `token` parameter
 * is a short-lived JWT (`jose`, HMAC-SHA256 under a key derived from ENCRYPTION_KEY for this purpose only) naming
 * the job and its organization [docs/decisions.md "MCP and OAuth"]. A tampered, expired or other job's token → 401.
 */
import { errors as joseErrors, jwtVerify, SignJWT } from 'jose';
import type { Config } from '../lib/config';
import { derivedKey } from './oauthServer';

/** Default and longest lifetime of a signed stream URL. */
export const APP_STREAM_URL_SECONDS = { default: 3600, max: 86_400 } as const;

const PURPOSE = 'mcp-app-stream';
const TYPE = 'app-stream+jwt';
const audience = (config: Readonly<Config>): string => `${config.appUrl.replace(/\/+$/, '')}/mcp-app`;

/**
 * @param jobId the job.
 * @returns the stream's path.
 */
export const jobEventsPath = (jobId: string): string => `/mcp-app/jobs/${encodeURIComponent(jobId)}/events`;

/**
 * Signs a URL of a job's event stream.
 * @param config APP_URL and ENCRYPTION_KEY.
 * @param grant the job's organization, the job and the URL's lifetime in seconds.
 * @returns the URL and when it expires.
 */
export async function signJobEventsUrl(
  config: Readonly<Config>,
  grant: { organizationId: string; jobId: string; expiresInSeconds?: number }
): Promise<{ url: string; expiresAt: Date }> {
  const seconds = Math.min(grant.expiresInSeconds ?? APP_STREAM_URL_SECONDS.default, APP_STREAM_URL_SECONDS.max);
  const exp = Math.floor(Date.now() / 1000) + seconds;
  const token = await new SignJWT({ org: grant.organizationId })
    .setProtectedHeader({ alg: 'HS256', typ: TYPE })
    .setAudience(audience(config))
    .setSubject(grant.jobId)
    .setExpirationTime(exp)
    .sign(derivedKey(config, PURPOSE));
  const url = `${config.appUrl.replace(/\/+$/, '')}${jobEventsPath(grant.jobId)}?token=${token}`;
  return { url, expiresAt: new Date(exp * 1000) };
}

/**
 * @param config APP_URL and ENCRYPTION_KEY.
 * @param jobId the job of the requested stream.
 * @param token the URL's token.
 * @returns the job's organization, or why the token is refused.
 */
export async function verifyJobEventsToken(
  config: Readonly<Config>,
  jobId: string,
  token: string
): Promise<{ organizationId: string } | 'invalid' | 'expired'> {
  try {
    const { payload } = await jwtVerify(token, derivedKey(config, PURPOSE), {
      audience: audience(config),
      subject: jobId,
      algorithms: ['HS256'],
      typ: TYPE,
    });
    return typeof payload.org === 'string' ? { organizationId: payload.org } : 'invalid';
  } catch (err) {
    if (err instanceof joseErrors.JWTExpired) return 'expired';
    if (err instanceof joseErrors.JOSEError) return 'invalid';
    throw err;
  }
}

/**
 * One error vocabulary for both HTTP surfaces. Handlers throw these; api/middlewares/errors.ts renders them as
 * the v1 body `{error:true,statusCode,statusMessage,message}` or the current body `{error:{code,message}}`.
 * `expose` is false only for 5xx: their messages never reach clients.
 */

/** Base class: an HTTP status, a stable machine code and a client-safe message. */
export class AppError extends Error {
  readonly expose: boolean;
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly headers: Record<string, string> = {}
  ) {
    super(message);
    this.name = new.target.name;
    this.expose = status < 500;
  }
}

/** 400: the request is malformed or a value is invalid. */
export class ValidationError extends AppError {
  constructor(message: string) {
    super(400, 'validation_failed', message);
  }
}

/** 400: the body is not valid JSON. */
export class InvalidJsonError extends AppError {
  constructor(message = 'Invalid JSON in request body') {
    super(400, 'invalid_json', message);
  }
}

/** 400: the client went away before its request was read or answered (nobody reads the answer). */
export class RequestAbortedError extends AppError {
  constructor() {
    super(400, 'request_aborted', 'Request aborted');
  }
}

/** 401: missing, invalid or expired credentials (messages fixed by the spec). */
export class UnauthorizedError extends AppError {
  constructor(message: string) {
    super(401, 'unauthorized', message, { 'www-authenticate': 'Bearer' });
  }
}

/**
 * 401 of the console's sign-in (`POST /api/session`) and of a request whose session cookie is no longer alive: the
 * token or the session is refused, in words a person reads on the sign-in page.
 */
export class InvalidTokenError extends AppError {
  constructor(message = 'Invalid or expired token') {
    super(401, 'invalid_token', message);
  }
}

/** Why an identity provider's ID token was refused (lib/oidc.ts), besides a provider that cannot be reached (503). */
export type IdTokenProblem = 'malformed' | 'issuer' | 'audience' | 'expired' | 'unknown_key' | 'signature' | 'nonce';

/**
 * 401 of an identity provider's ID token on the client-library endpoints, or of the console's "Sign in with SSO"
 * (docs/identity.md): one code per reason, so the caller can tell a clock or configuration problem from a bad token.
 * @param problem why the token was refused, or `unmapped` when it is valid but names no member.
 * @returns the error.
 */
export function idTokenError(problem: IdTokenProblem | 'unmapped'): AppError {
  const headers = { 'www-authenticate': 'Bearer error="invalid_token"' };
  switch (problem) {
    case 'expired':
      return new AppError(401, 'id_token_expired', 'ID token expired (or not yet valid)', headers);
    case 'audience':
      return new AppError(
        401,
        'id_token_audience',
        'ID token audience is not a client id this service accepts',
        headers
      );
    case 'issuer':
      return new AppError(401, 'id_token_issuer', 'ID token issuer is not a configured identity provider', headers);
    case 'unknown_key':
      return new AppError(
        401,
        'id_token_unknown_key',
        'ID token signed with a key its identity provider does not publish',
        headers
      );
    case 'unmapped':
      return new AppError(
        401,
        'identity_unmapped',
        'No member of an organization matches this identity (a verified email in a verified domain, or an identity link)',
        headers
      );
    default:
      return new AppError(401, 'id_token_invalid', 'ID token invalid (signature, algorithm, claims or nonce)', headers);
  }
}

/**
 * 403: a request authenticated by the session cookie that changes something without an `Origin` header naming the
 * service itself (cross-site request forgery) [docs/decisions.md "Console sessions"].
 */
export class CsrfError extends AppError {
  constructor() {
    super(
      403,
      'csrf_rejected',
      'Cross-site request refused (CSRF check): a request signed in with the session cookie that changes something must carry an Origin header naming this service'
    );
  }
}

/** 403: authenticated but not permitted. */
export class ForbiddenError extends AppError {
  constructor(message = "You don't have permission to access this resource") {
    super(403, 'forbidden', message);
  }
}

/** 404: unknown id, deleted resource, another organization's resource, or unknown route. */
export class NotFoundError extends AppError {
  constructor(message = 'Not found') {
    super(404, 'not_found', message);
  }
}

/** 405: the path exists but not with this method. */
export class MethodNotAllowedError extends AppError {
  constructor(allowed: string[]) {
    super(405, 'method_not_allowed', 'Method not allowed', { allow: allowed.join(', ') });
  }
}

/** 409: the request conflicts with the current state (duplicate, busy session, illegal state). */
export class ConflictError extends AppError {
  constructor(message: string) {
    super(409, 'conflict', message);
  }
}

/**
 * 409: an action that does not fit the resource's current state (a job's approve while it runs): the current
 * surface's body also carries `current_state` [docs/decisions.md "Jobs"].
 */
export class StateConflictError extends ConflictError {
  constructor(
    message: string,
    readonly currentState: string
  ) {
    super(message);
  }
}

/** 413: the body is larger than the configured limit. */
export class PayloadTooLargeError extends AppError {
  constructor(limitBytes: number) {
    super(413, 'payload_too_large', `Request body exceeds the limit of ${limitBytes} bytes`);
  }
}

/** 413: a workspace write would go over the per-file or per-workspace cap. */
export class StorageLimitError extends AppError {
  constructor(message: string) {
    super(413, 'payload_too_large', message);
  }
}

/** 410: a public link (file share, app) that expired or was revoked. */
export class GoneError extends AppError {
  constructor(message: string) {
    super(410, 'gone', message);
  }
}

/** 415: a body was sent with a media type other than JSON (or, for an upload, the one it takes). */
export class UnsupportedMediaTypeError extends AppError {
  constructor(message = 'Content-Type must be application/json') {
    super(415, 'unsupported_media_type', message);
  }
}

/** 400: the body's bytes do not decode as its declared `Content-Encoding`. */
export class InvalidContentEncodingError extends AppError {
  constructor(coding: string) {
    super(400, 'invalid_content_encoding', `Request body could not be decoded as Content-Encoding ${coding}`);
  }
}

/** 415: the body was sent with a `Content-Encoding` the service does not decode. */
export class UnsupportedContentEncodingError extends AppError {
  constructor(message = 'Content-Encoding must be gzip, deflate, br or identity') {
    super(415, 'unsupported_media_type', message);
  }
}

/** 422: a data-block query went over its time or memory limit. */
export class QueryLimitError extends AppError {
  constructor(message: string) {
    super(422, 'query_limit_exceeded', message);
  }
}

/** 429: the identity's request budget is spent. */
export class RateLimitedError extends AppError {
  constructor(retryAfterSeconds: number) {
    super(429, 'rate_limited', 'Too many requests', { 'retry-after': String(retryAfterSeconds) });
  }
}

/**
 * 402: a budget of the organization (or of the agent, or of the mission) is spent for its period: new executions are
 * refused until the period ends or the cap is raised (docs/spend.md; not 429: waiting a moment does not help).
 */
export class BudgetExceededError extends AppError {
  constructor(message: string) {
    super(402, 'budget_exceeded', message);
  }
}

/** 500: anything unexpected; the real cause goes to the log only. */
export class InternalError extends AppError {
  constructor(message = 'An unexpected error occurred') {
    super(500, 'internal_error', message);
  }
}

/** 503: a dependency (MongoDB, Temporal) is unreachable. */
export class ServiceUnavailableError extends AppError {
  constructor() {
    super(503, 'service_unavailable', 'Service temporarily unavailable. Please retry.', { 'retry-after': '1' });
  }
}

/**
 * 503: the process is at its capacity for executions and its waiting line is full, or the wait for a slot ran out
 * (lib/executionAdmission.ts); `Retry-After` estimates when a slot frees.
 */
export class OverloadedError extends AppError {
  constructor(retryAfterSeconds: number) {
    super(503, 'service_unavailable', 'The service is at capacity. Please retry later.', {
      'retry-after': String(retryAfterSeconds),
    });
  }
}

/** 409: a request with the same Idempotency-Key is still being processed. */
export class IdempotencyInProgressError extends AppError {
  constructor(message = 'A request with this Idempotency-Key is still being processed; retry after it completes') {
    super(409, 'idempotency_conflict', message);
  }
}

/** 422: the Idempotency-Key was already used for a different request (method, path or body). */
export class IdempotencyMismatchError extends AppError {
  constructor() {
    super(422, 'idempotency_key_reused', 'This Idempotency-Key was already used with a different request');
  }
}

/** 500: an agent execution failed (the v1 execute's wording). */
export class ExecutionFailedError extends AppError {
  constructor() {
    super(500, 'execution_failed', 'Chat execution failed');
  }
}

/** 500: a space directory could not be initialized. */
export class SpaceInitFailedError extends AppError {
  constructor(cause: string) {
    super(500, 'init_failed', `Space initialization failed: ${cause}`);
  }
}

/** 500: secrets cannot be stored because no encryption key is configured. */
export class EncryptionUnavailableError extends AppError {
  constructor() {
    super(500, 'encryption_unavailable', 'ENCRYPTION_KEY is not configured');
  }
}

/**
 * An error whose body the OAuth specifications fix (RFC 6749 §5.2, RFC 6750 §3.1, RFC 7591 §3.2.2): rendered as
 * `{error: <oauthCode>, error_description}` (api/middlewares/errors.ts), never in a surface's envelope. Thrown by
 * the authorization server's endpoints and by the MCP endpoint's bearer check.
 */
export class OAuthError extends AppError {
  constructor(
    status: number,
    readonly oauthCode: string,
    description: string,
    headers: Record<string, string> = {}
  ) {
    super(status, 'oauth', description, headers);
  }
}

/**
 * An error carried across a process boundary (the data-query processes, lib/dataQuery.ts): rebuilt with the
 * status, code and message it had on the other side.
 * @param e what was sent.
 * @returns the error.
 */
export function rebuildError(e: { status: number; code: string; message: string }): AppError {
  return new AppError(e.status, e.code, e.message);
}

/**
 * Idempotency-Key records (docs/decisions.md "Idempotency"): claim a key for a request, then store its answer or
 * release the key. Every operation is keyed by `_id` = `<organizationId>:<userId>:<sha256(key)>`, so it is
 * index-served on every server, and the claim is an insert, so of any number of concurrent requests with one key
 * exactly one runs.
 */
import type { AuthContext } from './tokens';
import { decryptSecret, encryptSecret, sha256Hex } from '../lib/crypto';
import { IdempotencyInProgressError, IdempotencyMismatchError } from '../lib/errors';
import { expiryFields } from '../lib/expiry';
import { IdempotencyRecord, type IdempotencyRecordDoc } from '../models';
import { isDuplicateKey } from '../lib/mongo';

/** How long a key and its answer are kept. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a running request holds its key; after that its process is presumed gone and the key is free again. */
export const IDEMPOTENCY_LOCK_MS = 5 * 60 * 1000;

/** A stored answer. */
export interface StoredResponse {
  status: number;
  body: unknown;
  headers: Record<string, string>;
}

/** The outcome of a claim: run the request, or replay an earlier answer. */
export type Claim = { id: string; replay?: undefined } | { id: string; replay: StoredResponse };

/**
 * Claims an Idempotency-Key for a request.
 * @param auth the caller (the key's identity is its user in its organization).
 * @param key the Idempotency-Key header value.
 * @param fingerprint hash of the request (method, path, body).
 * @param sealKey the key the stored answers are sealed with (ENCRYPTION_KEY).
 * @param now the current time (ms).
 * @returns the record id and, for a repeated request, the answer to replay.
 * @throws IdempotencyMismatchError (422) when the key was used for another request; IdempotencyInProgressError
 *   (409) while the first request still runs, or when its answer was an event stream.
 */
export async function claimIdempotencyKey(
  auth: AuthContext,
  key: string,
  fingerprint: string,
  sealKey?: Buffer,
  now = Date.now()
): Promise<Claim> {
  const id = `${auth.organizationId}:${auth.userId}:${sha256Hex(key)}`;
  const fresh = {
    fingerprint,
    state: 'running',
    lockedUntil: new Date(now + IDEMPOTENCY_LOCK_MS),
    response: null,
    ...expiryFields(new Date(now + IDEMPOTENCY_TTL_MS)),
  };
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await IdempotencyRecord.create({ _id: id, ...fresh });
      return { id };
    } catch (err) {
      if (!isDuplicateKey(err)) throw err;
    }
    const found = await IdempotencyRecord.findById(id).lean<IdempotencyRecordDoc>();
    if (!found) continue; // removed meanwhile: claim again
    const expired = found.expiresAt.getTime() <= now;
    const abandoned = found.state === 'running' && found.lockedUntil.getTime() <= now;
    if (expired || abandoned) {
      // Take the key over, conditionally on the record being the one just read (a concurrent taker loses).
      const res = await IdempotencyRecord.updateOne(
        { _id: id, lockedUntil: found.lockedUntil, expiresAt: found.expiresAt },
        { $set: fresh }
      );
      if (res.modifiedCount === 1) return { id };
      continue;
    }
    if (found.fingerprint !== fingerprint) throw new IdempotencyMismatchError();
    if (found.state === 'running' || !found.response) throw new IdempotencyInProgressError();
    const stored = JSON.parse(unseal(found.response, sealKey)) as StoredResponse | { streamed: true };
    if ('streamed' in stored)
      throw new IdempotencyInProgressError(
        'The first request with this Idempotency-Key answered with an event stream, which cannot be replayed'
      );
    return { id, replay: stored };
  }
  throw new IdempotencyInProgressError();
}

/** A sealed answer (lib/crypto.ts encryptSecret) starts so; an answer kept without a key is JSON (`{`). */
const SEALED_PREFIX = 'v1.';

/**
 * The stored answer as text: sealed with the key when there is one, so that the secrets some answers carry once (a
 * rotated signing secret, a share's URL token) are never stored in clear [docs/decisions.md "Security (issue 30)"].
 * Without ENCRYPTION_KEY (development only: production requires it) the answer is kept as is.
 */
function seal(json: string, sealKey: Buffer | undefined): string {
  return sealKey ? encryptSecret(sealKey, json) : json;
}

function unseal(stored: string, sealKey: Buffer | undefined): string {
  if (!stored.startsWith(SEALED_PREFIX)) return stored;
  if (!sealKey) throw new IdempotencyInProgressError('The answer of this Idempotency-Key cannot be read: no key');
  return decryptSecret(sealKey, stored);
}

/**
 * Stores the answer of a claimed request (kept until the record expires), sealed with `sealKey` when given.
 * @param id the record id from the claim.
 * @param response the answer, or `streamed` for an event stream.
 * @param sealKey the key the answer is sealed with (ENCRYPTION_KEY).
 */
export async function completeIdempotencyKey(
  id: string,
  response: StoredResponse | 'streamed',
  sealKey?: Buffer
): Promise<void> {
  const stored = response === 'streamed' ? { streamed: true } : response;
  await IdempotencyRecord.updateOne(
    { _id: id },
    { $set: { state: 'done', response: seal(JSON.stringify(stored), sealKey) } }
  );
}

/**
 * Frees a claimed key whose request failed with a server error, so that the client's retry runs again.
 * @param id the record id from the claim.
 */
export async function releaseIdempotencyKey(id: string): Promise<void> {
  await IdempotencyRecord.deleteOne({ _id: id, state: 'running' });
}

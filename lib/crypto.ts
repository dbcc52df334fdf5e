/**
 * Hashing, token generation, constant-time comparison and AES-256-GCM for secrets at rest.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { randomBase62 } from './ids';

/** Token prefixes: `td_` personal access tokens (v1 surface), `svc_` scoped service tokens (current surface). */
export const TOKEN_PREFIX = { v1: 'td_', service: 'svc_' } as const;
export type TokenKind = keyof typeof TOKEN_PREFIX;

/**
 * @param value text to hash.
 * @returns lowercase hex SHA-256.
 */
export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

/**
 * A new clear-text token (shown once; only its hash is stored).
 * @param kind v1 or service.
 * @returns the token, e.g. `td_` + 40 base62 characters (~238 bits).
 */
export function generateToken(kind: TokenKind): string {
  return TOKEN_PREFIX[kind] + randomBase62(40);
}

/**
 * Constant-time string equality.
 * @param a first value.
 * @param b second value.
 * @returns whether they are equal.
 */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}

/**
 * Encrypts a secret with AES-256-GCM.
 * @param key 32-byte key.
 * @param plaintext the secret.
 * @returns `v1.<iv>.<tag>.<ciphertext>` (base64url parts).
 */
export function encryptSecret(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join(
    '.'
  );
}

/**
 * Decrypts a value made by encryptSecret.
 * @param key 32-byte key.
 * @param sealed the stored value.
 * @returns the secret.
 */
export function decryptSecret(key: Buffer, sealed: string): string {
  const [v, iv, tag, ct] = sealed.split('.');
  if (v !== 'v1' || !iv || !tag || ct === undefined) throw new Error('unrecognised secret format');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
}

/**
 * Webhook signatures (SPEC "Webhook signature"): `v1` is the hex HMAC-SHA256, keyed with the signing secret, of
 * `<timestamp>.<rawBody>`; the header is `t=<timestamp>,v1=<hex>` with one `v1=` per valid secret during a
 * rotation's grace period (as Stripe does), so receivers holding either secret accept the delivery.
 */
import { createHmac } from 'node:crypto';
import { randomBase62 } from './ids';
import { safeEqual } from './crypto';

/** @returns a new signing secret, `whsec_` + 40 base62 characters (the whole string is the HMAC key). */
export function newSigningSecret(): string {
  return `whsec_${randomBase62(40)}`;
}

/**
 * @param secret the signing secret.
 * @param timestamp Unix seconds.
 * @param rawBody the exact body sent.
 * @returns the hex signature.
 */
export function signPayload(secret: string, timestamp: number, rawBody: string): string {
  return createHmac('sha256', secret).update(`${timestamp}.${rawBody}`, 'utf8').digest('hex');
}

/**
 * @param secrets every secret that signs now (current first).
 * @param timestamp Unix seconds.
 * @param rawBody the exact body sent.
 * @returns the `Service-Signature` value.
 */
export function signatureHeader(secrets: string[], timestamp: number, rawBody: string): string {
  return [`t=${timestamp}`, ...secrets.map((s) => `v1=${signPayload(s, timestamp, rawBody)}`)].join(',');
}

/**
 * The receiver's check (used by tests and documented for receivers): some `v1` matches, compared in constant time.
 * @param header the `Service-Signature` value.
 * @param secret the receiver's secret.
 * @param rawBody the body as received.
 * @returns whether the signature is valid.
 */
export function verifySignature(header: string, secret: string, rawBody: string): boolean {
  const parts = header.split(',').map((p) => p.split('=', 2) as [string, string | undefined]);
  const t = parts.find(([k]) => k === 't')?.[1];
  if (t === undefined || !/^\d+$/.test(t)) return false;
  const expected = signPayload(secret, Number(t), rawBody);
  return parts.some(([k, v]) => k === 'v1' && v !== undefined && safeEqual(v, expected));
}

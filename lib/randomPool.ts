/**
 * Small random draws from a pool: the payload codec's IVs (lib/dataConverter.ts) and the random part of ids
 * (lib/ids.ts) take 8 to 32 bytes many times per execution, and each `randomBytes` call is a call into OpenSSL's
 * generator with its own fixed cost (a profile's 0.7 % of the service process's main thread, docs/benchmarks.md
 * "The service process's CPU per execution, again"). The pool is filled from the same CSPRNG, POOL_BYTES at a time,
 * as Node's own `crypto.randomUUID` pools its randomness. Each fill is a new buffer that is never written again, so
 * a slice handed out stays what it was.
 */
import { randomBytes } from 'node:crypto';

/** Bytes drawn from the generator at a time. */
const POOL_BYTES = 4096;
/** Draws larger than this go to the generator directly. */
const MAX_POOLED = 256;

let pool = Buffer.alloc(0);
let offset = 0;

/**
 * @param size the number of bytes.
 * @returns `size` random bytes from the CSPRNG (a view into a pool buffer that nothing writes again).
 */
export function pooledRandomBytes(size: number): Buffer {
  if (size > MAX_POOLED) return randomBytes(size);
  if (offset + size > pool.length) {
    pool = randomBytes(POOL_BYTES);
    offset = 0;
  }
  const out = pool.subarray(offset, offset + size);
  offset += size;
  return out;
}

/**
 * Identifiers (docs/architecture.md §4): tasks `task-<ms>-<random>`, executions `exec-<ms>-<random>`, every other
 * resource a short prefix + `_` + random base62.
 */
import { pooledRandomBytes } from './randomPool';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/**
 * Random base62 string from a CSPRNG (rejection sampling, so every character is uniform; drawn from the pool of
 * lib/randomPool.ts).
 * @param length number of characters.
 * @returns the string.
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const b of pooledRandomBytes(length * 2)) {
      if (b < 248) out += ALPHABET[b % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** Prefixes of resource ids. */
export type IdPrefix =
  | 'org'
  | 'usr'
  | 'mbr'
  | 'tok'
  | 'agt'
  | 'spc'
  | 'chat'
  | 'ses'
  | 'job'
  | 'msn'
  | 'evt'
  | 'key'
  | 'shr'
  | 'app'
  | 'repo'
  | 'oac'
  | 'mcps'
  | 'skl'
  | 'mcp'
  | 'med'
  | 'idl'
  | 'bdg';

/**
 * A new resource id such as `agt_3fK9...`.
 * @param prefix the resource prefix.
 * @returns the id.
 */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomBase62(16)}`;
}

/** @returns a task id `task-<ms>-<random>`. */
export function newTaskId(): string {
  return `task-${Date.now()}-${randomBase62(8).toLowerCase()}`;
}

/** @returns an execution id `exec-<ms>-<random>`. */
export function newExecutionId(): string {
  return `exec-${Date.now()}-${randomBase62(8).toLowerCase()}`;
}

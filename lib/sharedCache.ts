/**
 * Read-through caches of small, read-mostly records, kept in each api process and the worker, invalidated across them
 * (docs/decisions.md "Caches of read-mostly records").
 *
 * - A value is read from the database on a miss and kept for at most `ttlMs` (config `CACHE_TTL_MS`).
 * - Every write the service makes to what a cache holds calls {@link invalidate}: the process clears the group at
 *   once (a client reads its own writes) and tells every other process through the wake-up channel
 *   (lib/wakeups.ts), which clears it there too. A lost datagram, or a change made to the database directly, is seen
 *   within `ttlMs`.
 * - A read that started before an invalidation of its cache does not store what it read, so a slow read cannot put a
 *   value back that an invalidation removed meanwhile.
 * - Nothing negative is kept: a miss that finds nothing reads the database again next time.
 * - Concurrent misses of one key share one read: under load, requests that found an entry expired used to read the
 *   record each (at c20 about three times as many reads as entries expired, docs/benchmarks.md "The service
 *   process's CPU per execution, again"). A miss that comes after an invalidation never joins a read that started
 *   before it, so a client still reads its own writes.
 *
 * Entries belong to a group (an organization), which is what an invalidation names.
 */
import { broadcastInvalidations, onInvalidation } from './wakeups';

/** Default entries per cache; past it, the oldest insertion goes first. */
const DEFAULT_MAX_ENTRIES = 10_000;

interface Entry<V> {
  value: V;
  group: string;
  expiresAt: number;
}

/** What a cache's load reads: the value and its group (kept unless `keep` is false). */
interface Loaded<V> {
  value: V;
  group: string;
  keep?: boolean;
}

const caches = new Map<string, SharedCache<unknown>>();
/**
 * Off until {@link configureCaches}: only processes that receive invalidations turn caches on (api/app.ts,
 * worker/main.ts); the admin CLI always reads the database.
 */
let ttlMs = 0;

/** A named cache of one kind of record, keyed by a string, grouped by organization. */
export class SharedCache<V> {
  private readonly entries = new Map<string, Entry<V>>();
  private readonly groups = new Map<string, Set<string>>();
  /** Bumped by every invalidation: a read that started under another generation does not store its value. */
  private generation = 0;
  /** The read in progress of each key, and the generation it started under. */
  private readonly loading = new Map<string, { generation: number; read: Promise<Loaded<V> | undefined> }>();

  /**
   * @param name the cache's name in invalidation messages (unique per process).
   * @param maxEntries the most entries kept (bounds the memory of large values).
   */
  constructor(
    readonly name: string,
    private readonly maxEntries = DEFAULT_MAX_ENTRIES
  ) {
    if (name.includes(':')) throw new Error(`cache name must not contain ':' (${name})`);
    caches.set(name, this as SharedCache<unknown>);
  }

  /**
   * @param key the record's key.
   * @param load reads the record: its value and its group (kept unless `keep` is false), or undefined when there is
   *   none (not kept).
   * @returns the cached or loaded value, or undefined.
   */
  async get(key: string, load: () => Promise<Loaded<V> | undefined>): Promise<V | undefined> {
    const now = Date.now();
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > now) return hit.value;
    if (hit) this.drop(key, hit.group);
    const generation = this.generation;
    // A read of this key already under way, started under this generation (no invalidation since): its answer.
    // (Caches off, every call reads.)
    const pending = this.loading.get(key);
    if (pending && pending.generation === generation && ttlMs > 0) return (await pending.read)?.value;
    const read = load();
    if (ttlMs > 0) this.loading.set(key, { generation, read });
    let loaded: Loaded<V> | undefined;
    try {
      loaded = await read;
    } finally {
      if (this.loading.get(key)?.read === read) this.loading.delete(key);
    }
    if (loaded === undefined) return undefined;
    if (loaded.keep !== false && generation === this.generation && ttlMs > 0)
      this.put(key, loaded.value, loaded.group, Date.now() + ttlMs);
    return loaded.value;
  }

  /** Entries held now (expired ones included until a later insertion removes them). */
  get size(): number {
    return this.entries.size;
  }

  /** Removes a group's entries in this process only (see {@link invalidate} for a write's invalidation). */
  clearLocal(group: string): void {
    this.generation++;
    const keys = this.groups.get(group);
    if (!keys) return;
    for (const key of keys) this.entries.delete(key);
    this.groups.delete(group);
  }

  private put(key: string, value: V, group: string, expiresAt: number): void {
    const old = this.entries.get(key);
    if (old) this.drop(key, old.group);
    // Entries are in insertion order, which is expiry order (one lifetime for all): expired ones go from the front,
    // so entries nobody reads again do not stay in memory; then the oldest, when the cache is full.
    const now = Date.now();
    for (const [oldestKey, oldest] of this.entries) {
      if (oldest.expiresAt > now && this.entries.size < this.maxEntries) break;
      this.drop(oldestKey, oldest.group);
    }
    this.entries.set(key, { value, group, expiresAt });
    let keys = this.groups.get(group);
    if (!keys) this.groups.set(group, (keys = new Set()));
    keys.add(key);
  }

  private drop(key: string, group: string): void {
    this.entries.delete(key);
    const keys = this.groups.get(group);
    keys?.delete(key);
    if (keys?.size === 0) this.groups.delete(group);
  }
}

/**
 * Sets how long an entry lives (CACHE_TTL_MS); 0 turns every cache off.
 * @param ms milliseconds.
 */
export function configureCaches(ms: number): void {
  ttlMs = ms;
}

/**
 * Clears a group of caches here and in every other api process. Call it after the write that changed what the caches
 * hold; it resolves once the messages are sent (never rejects: a lost message is covered by the entries' lifetime).
 * @param names the caches.
 * @param group the group (organization) whose entries changed.
 */
export async function invalidate(names: string | readonly string[], group: string): Promise<void> {
  const messages = (typeof names === 'string' ? [names] : names).map((name) => `${name}:${group}`);
  for (const m of messages) clearLocally(m);
  await broadcastInvalidations(messages);
}

/**
 * Applies an invalidation message (`<cache>:<group>`), made here or received from another process; unknown names
 * are ignored, so a forged message costs at most a read.
 * @param message the message.
 */
function clearLocally(message: string): void {
  const at = message.indexOf(':');
  if (at <= 0) return;
  caches.get(message.slice(0, at))?.clearLocal(message.slice(at + 1));
}
onInvalidation(clearLocally);

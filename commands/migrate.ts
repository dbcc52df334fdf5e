/**
 * `admin migrate` and the verification of `admin check` (docs/decisions.md "Indexes in production: admin
 * migrate"): what a database and a Temporal namespace need before the service runs on them, namely the collections
 * and indexes the models declare, the TTL indexes of expiring records (lib/expiry.ts), and the custom search
 * attributes of workflows/searchAttributes.ts, without which a workflow start that sets them fails.
 * Everything is created only when missing, and only the indexes lib/indexes.ts lists as retired (replaced by others)
 * are dropped, so migrate can run at every deployment.
 */
import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { ensureExpiryIndexes, missingExpiryIndexes } from '../lib/expiry';
import {
  createMissingCollections,
  createMissingIndexes,
  declaredIndexes,
  dropRetiredIndexes,
  missingIndexes,
} from '../lib/indexes';
import mongoose from 'mongoose';
import '../models';
import { SEARCH_ATTRIBUTES } from '../workflows/searchAttributes';

const IndexedValueType = temporal.api.enums.v1.IndexedValueType;
/** The gRPC status of a name registered meanwhile. */
const ALREADY_EXISTS = 6;
/** How long registered search attributes may take to be listed. */
const SETTLE_MS = 30_000;

/** Where the search attributes go: a Temporal connection and its namespace. */
export interface NamespaceRef {
  connection: Connection;
  namespace: string;
}

/** What `admin migrate` did. */
export interface MigrateReport {
  collections: { created: string[] };
  /** `dropped`: retired indexes (lib/indexes.ts RETIRED_INDEXES) the database still held. */
  indexes: { created: string[]; dropped: string[]; declared: number };
  ttlIndexes: { created: string[]; supported: boolean };
  searchAttributes: { namespace: string; created: string[]; present: string[] };
}

/** What `admin check` found missing (every list empty: nothing to do). */
export interface Missing {
  indexes: string[];
  ttlIndexes: string[];
  searchAttributes: string[];
}

/**
 * @param target the namespace.
 * @returns the names of SEARCH_ATTRIBUTES the namespace lacks; one registered with another type fails, naming it.
 */
export async function missingSearchAttributes(target: NamespaceRef): Promise<string[]> {
  const { customAttributes } = await target.connection.operatorService.listSearchAttributes({
    namespace: target.namespace,
  });
  const registered = customAttributes ?? {};
  const missing: string[] = [];
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) {
    const want = IndexedValueType[`INDEXED_VALUE_TYPE_${type.toUpperCase()}` as keyof typeof IndexedValueType];
    const have = registered[name];
    if (have === undefined || have === null) missing.push(name);
    else if (have !== want)
      throw new Error(
        `search attribute ${name} of namespace ${target.namespace} is registered as ${IndexedValueType[have] ?? String(have)}, ` +
          `the service needs ${type}: remove it from the namespace or rename it`
      );
  }
  return missing;
}

/**
 * Registers the search attributes the namespace lacks (already registered ones are left as they are).
 * @param target the namespace.
 * @returns the names registered and those that were there.
 */
export async function registerSearchAttributes(
  target: NamespaceRef
): Promise<{ created: string[]; present: string[] }> {
  const missing = await missingSearchAttributes(target);
  const present = Object.keys(SEARCH_ATTRIBUTES).filter((name) => !missing.includes(name));
  if (missing.length === 0) return { created: [], present };
  const searchAttributes = Object.fromEntries(
    missing.map((name) => [name, IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD])
  );
  try {
    await target.connection.operatorService.addSearchAttributes({ namespace: target.namespace, searchAttributes });
  } catch (err) {
    if ((err as { code?: number }).code !== ALREADY_EXISTS) {
      throw new Error(
        `cannot register the search attributes ${missing.join(', ')} (Keyword) on namespace ${target.namespace}: ` +
          `${(err as Error).message} (on Temporal Cloud, add them in its UI or with tcld)`
      );
    }
  }
  // The server answers from its namespace cache, refreshed every few seconds: wait until it lists them.
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const still = await missingSearchAttributes(target);
    if (still.length === 0) break;
    if (Date.now() > deadline)
      throw new Error(`namespace ${target.namespace} still lacks the search attributes ${still.join(', ')}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  return { created: missing, present };
}

/**
 * @returns whether the connected server keeps TTL indexes: MongoDB does, FerretDB 1.x refuses them (the api
 *   sweeps there, lib/expiry.ts).
 */
async function serverKeepsTtlIndexes(): Promise<boolean> {
  const info = await mongoose.connection.db!.admin().command({ buildInfo: 1 });
  return info.ferretdbVersion === undefined;
}

/**
 * Creates what the database and the namespace lack. MongoDB must be connected (without building indexes).
 * @param target the Temporal namespace.
 * @returns what it created.
 */
export async function migrate(target: NamespaceRef): Promise<MigrateReport> {
  const collections = await createMissingCollections();
  const indexes = await createMissingIndexes();
  const dropped = await dropRetiredIndexes();
  const ttlMissing = await missingExpiryIndexes();
  const supported = await ensureExpiryIndexes();
  const searchAttributes = await registerSearchAttributes(target);
  return {
    collections: { created: collections },
    indexes: { created: indexes.map((i) => i.ref), dropped, declared: declaredIndexes().length },
    ttlIndexes: { created: supported ? ttlMissing.map((c) => `${c}.expiresAt_ttl`) : [], supported },
    searchAttributes: { namespace: target.namespace, ...searchAttributes },
  };
}

/**
 * Finds what `admin migrate` would create; creates nothing. MongoDB must be connected (without building indexes).
 * @param target the Temporal namespace.
 * @returns what is missing.
 */
export async function findMissing(target: NamespaceRef): Promise<Missing> {
  const [indexes, ttl, keepsTtl, searchAttributes] = await Promise.all([
    missingIndexes(),
    missingExpiryIndexes(),
    serverKeepsTtlIndexes(),
    missingSearchAttributes(target),
  ]);
  return {
    indexes: indexes.map((i) => i.ref),
    ttlIndexes: keepsTtl ? ttl.map((c) => `${c}.expiresAt_ttl`) : [],
    searchAttributes,
  };
}

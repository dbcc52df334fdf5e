/**
 * Gives the calling test file its own database on the shared test server, dropped afterwards.
 */
import { randomBytes } from 'node:crypto';
import mongoose from 'mongoose';
import { connectMongo, disconnectMongo } from '../../lib/mongo';
import '../../models';
import { closeAfterAll } from './teardown';

/**
 * The test servers' MongoDB is the embedded FerretDB (globalSetup: AAS_TEST_MONGO_KIND), so tests of the embedded
 * database's own behaviour must run: they are skipped, and reported as skipped, only against mongod or a server
 * named by MONGODB_URI.
 */
export const ON_FERRETDB = process.env.AAS_TEST_MONGO_KIND === 'ferretdb';
/** `it` where the test servers are FerretDB, else `it.skip` (counted as skipped, never as passed). */
export const itOnFerretDb = ON_FERRETDB ? it : it.skip;

/**
 * Fails unless the connected server says it is FerretDB: a test of FerretDB's behaviour never passes against
 * anything else.
 */
export async function expectFerretDb(): Promise<void> {
  const info = await mongoose.connection.db!.admin().command({ buildInfo: 1 });
  if (!info.ferretdbVersion)
    throw new Error(`the test servers should be FerretDB (AAS_TEST_MONGO_KIND), but buildInfo says ${info.version}`);
}

/** @returns a unique database name. */
export function uniqueDbName(): string {
  return `t_${randomBytes(6).toString('hex')}`;
}

/**
 * Registers a beforeAll hook that connects mongoose to a fresh database, dropped after the file's tests, once the
 * apps and workers the file opened later are closed (test/helpers/teardown.ts).
 * @returns the database name and a URI naming it (for child processes).
 */
export function useTestDatabase(): { dbName: string; uri: string } {
  const dbName = uniqueDbName();
  const base = process.env.MONGODB_URI as string;
  const url = new URL(base);
  url.pathname = `/${dbName}`;
  const uri = url.toString();
  beforeAll(async () => {
    await connectMongo(base, { dbName });
  });
  // Registered first, so closed last: the file's apps and workers stop while their database is there.
  closeAfterAll(async () => {
    await mongoose.connection.db?.dropDatabase().catch(() => undefined);
    await disconnectMongo();
  });
  return { dbName, uri };
}

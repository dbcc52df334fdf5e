/**
 * MongoDB connection through mongoose. Works with MongoDB 7 and FerretDB 1.24: no multi-document transactions,
 * no change streams without feature detection. Filters are sanitised (`sanitizeFilter`), so a value that looks
 * like an operator (`{"$gt": ""}`) is matched literally, never executed.
 */
import mongoose from 'mongoose';
import { ensureExpiryIndexes } from './expiry';

mongoose.set('sanitizeFilter', true);
mongoose.set('strictQuery', true);

/** Default database name when the URI names none. */
export const DEFAULT_DB_NAME = 'agent_service';

/**
 * Connects the shared mongoose instance and builds every registered model's indexes.
 * @param uri MongoDB connection string.
 * @param options.dbName database to use when the URI has no path.
 * @returns the connection.
 */
export async function connectMongo(uri: string, options: { dbName?: string } = {}): Promise<mongoose.Connection> {
  const hasDb = /^mongodb(\+srv)?:\/\/[^/]+\/[^/?]+/.test(uri);
  await mongoose.connect(uri, {
    dbName: options.dbName ?? (hasDb ? undefined : DEFAULT_DB_NAME),
    serverSelectionTimeoutMS: 5000,
    connectTimeoutMS: 5000,
  });
  await Promise.all(Object.values(mongoose.connection.models).map((m) => m.init()));
  await ensureExpiryIndexes(); // TTL indexes where the server has them (lib/expiry.ts)
  return mongoose.connection;
}

/**
 * Pings the server, failing after `timeoutMs`.
 * @param timeoutMs deadline.
 */
export async function pingMongo(timeoutMs = 2000): Promise<void> {
  const db = mongoose.connection.db;
  if (!db || mongoose.connection.readyState !== 1) throw new Error('MongoDB is not connected');
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      db.admin().ping(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('MongoDB ping timed out')), timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Closes the shared connection. */
export async function disconnectMongo(): Promise<void> {
  await mongoose.disconnect();
}

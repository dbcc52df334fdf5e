/**
 * Provisions the servers the service needs and that the configuration does not name: the same code serves
 * `npm run dev` (fixed ports, data in .data/) and the jest global setup (free ports, a temporary data dir).
 */
import path from 'node:path';
import type { ToolConfig } from '../../lib/config';
import { ensureMongoServer, ensurePostgres, ensureTemporalCli, type MongoBinary, type Say } from './binaries';
import type { Unit } from '../lib/supervisor';
import { freePort, startMongo, startPostgres, startTemporal, type RunningServer } from './launch';

export { ProvisionError } from './binaries';
export { freePort, lockDataDir, type RunningServer } from './launch';

export interface ProvisionOptions {
  tools: ToolConfig;
  dataDir: string;
  namespace: string;
  /** Start MongoDB on this port (undefined: a configured MONGODB_URI is used instead). */
  mongoPort?: number;
  /** Start Temporal on this port (undefined: a configured TEMPORAL_ADDRESS is used instead). */
  temporalPort?: number;
  /** Web UI port; undefined runs Temporal headless. */
  temporalUiPort?: number;
  /** The address MongoDB and Temporal listen on (default loopback; PostgreSQL stays on loopback, FerretDB's own). */
  host?: string;
  say: Say;
}

export interface Provisioned {
  mongo?: RunningServer;
  /** The embedded PostgreSQL under FerretDB (absent with mongod or MONGODB_URI). */
  postgres?: RunningServer;
  temporal?: RunningServer;
  stop(): Promise<void>;
}

/** A MongoDB-compatible server and, under FerretDB, the PostgreSQL it stores its data in. */
export interface MongoStack {
  mongo: RunningServer;
  postgres?: RunningServer;
  /** Stops FerretDB before its PostgreSQL. */
  stop(): Promise<void>;
}

/**
 * Starts a mongod, or FerretDB's PostgreSQL (on a free port, data in `<dataDir>/postgres`) and then FerretDB.
 * @param server the binary from ensureMongoServer.
 * @param dataDir the data directory (`mongo/` and `postgres/` below it).
 * @param port the MongoDB port.
 * @param host the address MongoDB listens on (default loopback).
 * @param postgresSettings more PostgreSQL `name=value` settings (scripts/bench/groupCommit.ts).
 * @returns the running stack.
 */
export async function startMongoStack(
  server: MongoBinary,
  dataDir: string,
  port: number,
  host?: string,
  postgresSettings?: string[]
): Promise<MongoStack> {
  if (server.kind === 'mongod') {
    const mongo = await startMongo({ server, dataDir: path.join(dataDir, 'mongo'), port, host });
    return { mongo, stop: () => mongo.stop() };
  }
  const postgres = await startPostgres({
    bins: ensurePostgres(),
    dataDir: path.join(dataDir, 'postgres'),
    port: await freePort(),
    settings: postgresSettings,
  });
  try {
    const mongo = await startMongo({
      server,
      dataDir: path.join(dataDir, 'mongo'),
      port,
      postgresUrl: postgres.address,
      host,
    });
    return {
      mongo,
      postgres,
      stop: async () => {
        await mongo.stop();
        await postgres.stop();
      },
    };
  } catch (err) {
    await postgres.stop();
    throw err;
  }
}

/**
 * Finds or builds the requested binaries. Both Go builds of a first start run at once: they overlap downloads,
 * single-threaded compile and link phases and the other's waits, so the pair ends sooner than one after the other,
 * even on 2 cores. A failure is reported once both have ended (never a build left running behind an error).
 * @param opts what to start.
 * @returns the binaries (undefined: not requested).
 */
export async function ensureBinaries(
  opts: Pick<ProvisionOptions, 'tools' | 'say' | 'mongoPort' | 'temporalPort'>
): Promise<{ mongoBin?: MongoBinary; temporalBin?: string }> {
  const [mongo, temporal] = await Promise.allSettled([
    opts.mongoPort !== undefined ? ensureMongoServer(opts.tools, opts.say) : Promise.resolve(undefined),
    opts.temporalPort !== undefined ? ensureTemporalCli(opts.tools, opts.say) : Promise.resolve(undefined),
  ]);
  if (mongo.status === 'rejected') throw mongo.reason;
  if (temporal.status === 'rejected') throw temporal.reason;
  return { mongoBin: mongo.value, temporalBin: temporal.value };
}

/**
 * Builds (first run, both at once) and starts the requested servers; the servers start together.
 * @param opts what to start and where.
 * @returns the running servers.
 */
export async function provisionServers(opts: ProvisionOptions): Promise<Provisioned> {
  const { mongoBin, temporalBin } = await ensureBinaries(opts);
  const [mongo, temporal] = await Promise.allSettled([
    mongoBin && opts.mongoPort !== undefined
      ? startMongoStack(mongoBin, opts.dataDir, opts.mongoPort, opts.host)
      : Promise.resolve(undefined),
    temporalBin && opts.temporalPort !== undefined
      ? startTemporal({
          bin: temporalBin,
          dataDir: path.join(opts.dataDir, 'temporal'),
          port: opts.temporalPort,
          uiPort: opts.temporalUiPort,
          namespace: opts.namespace,
          host: opts.host,
        })
      : Promise.resolve(undefined),
  ]);
  const started = [mongo, temporal].flatMap((r) => (r.status === 'fulfilled' && r.value ? [r.value] : []));
  const stop = async (): Promise<void> => {
    await Promise.allSettled(started.map((s) => s.stop()));
  };
  const failed = [mongo, temporal].find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) {
    await stop();
    throw failed.reason;
  }
  const stack = mongo.status === 'fulfilled' ? mongo.value : undefined;
  return {
    mongo: stack?.mongo,
    postgres: stack?.postgres,
    temporal: temporal.status === 'fulfilled' ? temporal.value : undefined,
    stop,
  };
}

/** The servers as supervised units (`npm run dev`), with the addresses they will have. */
export interface ServerUnits {
  /** PostgreSQL (FerretDB only), then MongoDB (`ferretdb` or `mongod`), and `temporal`. */
  units: Unit[];
  mongo?: { kind: string; address: string };
  postgres?: { address: string };
  temporal?: { address: string };
}

/**
 * Builds (first run, both at once) the requested servers' binaries and describes how to start each one, so that the supervisor
 * starts them and starts them again after a crash on the same port and data directory: PostgreSQL (a free port
 * chosen once, data in `<dataDir>/postgres`), FerretDB after it (or a mongod, data in `<dataDir>/mongo`), and
 * the Temporal dev server (`<dataDir>/temporal`).
 * @param opts what to start and where.
 * @returns the units and the addresses.
 */
export async function serverUnits(opts: ProvisionOptions): Promise<ServerUnits> {
  const { mongoBin, temporalBin } = await ensureBinaries(opts);
  const result: ServerUnits = { units: [] };
  if (mongoBin && opts.mongoPort !== undefined) {
    const mongoPort = opts.mongoPort;
    let postgresUrl: string | undefined;
    if (mongoBin.kind === 'ferretdb') {
      const bins = ensurePostgres();
      const port = await freePort();
      const dataDir = path.join(opts.dataDir, 'postgres');
      postgresUrl = `postgres://postgres@127.0.0.1:${port}/postgres`;
      result.postgres = { address: postgresUrl };
      result.units.push({ name: 'postgres', start: () => startPostgres({ bins, dataDir, port }) });
    }
    result.mongo = { kind: mongoBin.kind, address: `mongodb://127.0.0.1:${mongoPort}` };
    result.units.push({
      name: mongoBin.kind,
      after: postgresUrl ? ['postgres'] : [],
      start: () =>
        startMongo({ server: mongoBin, dataDir: path.join(opts.dataDir, 'mongo'), port: mongoPort, postgresUrl }),
    });
  }
  if (temporalBin && opts.temporalPort !== undefined) {
    const port = opts.temporalPort;
    result.temporal = { address: `127.0.0.1:${port}` };
    result.units.push({
      name: 'temporal',
      start: () =>
        startTemporal({
          bin: temporalBin,
          dataDir: path.join(opts.dataDir, 'temporal'),
          port,
          uiPort: opts.temporalUiPort,
          namespace: opts.namespace,
        }),
    });
  }
  return result;
}

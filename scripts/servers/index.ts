/**
 * Provisions the servers the service needs and that the configuration does not name: the same code serves
 * `npm run dev` (fixed ports, data in .data/) and the jest global setup (free ports, a temporary data dir).
 */
import path from 'node:path';
import type { ToolConfig } from '../../lib/config';
import { ensureMongoServer, ensureTemporalCli, type Say } from './binaries';
import { startMongo, startTemporal, type RunningServer } from './launch';

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
  say: Say;
}

export interface Provisioned {
  mongo?: RunningServer;
  temporal?: RunningServer;
  stop(): Promise<void>;
}

/**
 * Builds (first run) and starts the requested servers. Binaries are resolved one after the other (two Go builds
 * at once would only share 2 cores), then both servers start together.
 * @param opts what to start and where.
 * @returns the running servers.
 */
export async function provisionServers(opts: ProvisionOptions): Promise<Provisioned> {
  const mongoBin = opts.mongoPort !== undefined ? await ensureMongoServer(opts.tools, opts.say) : undefined;
  const temporalBin = opts.temporalPort !== undefined ? await ensureTemporalCli(opts.tools, opts.say) : undefined;
  const [mongo, temporal] = await Promise.allSettled([
    mongoBin && opts.mongoPort !== undefined
      ? startMongo({ server: mongoBin, dataDir: path.join(opts.dataDir, 'mongo'), port: opts.mongoPort })
      : Promise.resolve(undefined),
    temporalBin && opts.temporalPort !== undefined
      ? startTemporal({
          bin: temporalBin,
          dataDir: path.join(opts.dataDir, 'temporal'),
          port: opts.temporalPort,
          uiPort: opts.temporalUiPort,
          namespace: opts.namespace,
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
  return {
    mongo: mongo.status === 'fulfilled' ? mongo.value : undefined,
    temporal: temporal.status === 'fulfilled' ? temporal.value : undefined,
    stop,
  };
}

/**
 * The *servers* host of the multi-host bed (scripts/lib/multiHost.ts), run on that host: provisions the embedded
 * MongoDB-compatible server and the Temporal dev server (the same code as `npm run dev`) listening on the host's
 * bridge address, prints one JSON line with their addresses, and stops them on SIGTERM.
 * Usage: node --import tsx scripts/lib/bedServers.ts <dataDir> <address>
 */
import { loadToolConfig } from '../../lib/config';
import { provisionServers } from '../servers';

async function main(): Promise<void> {
  const [dataDir, host] = process.argv.slice(2);
  const servers = await provisionServers({
    tools: loadToolConfig(),
    dataDir,
    namespace: 'default',
    mongoPort: 27017,
    temporalPort: 7233,
    host,
    say: (line) => void process.stderr.write(`[bed servers] ${line}\n`),
  });
  process.stdout.write(`${JSON.stringify({ mongo: servers.mongo!.address, temporal: servers.temporal!.address })}\n`);
  const stop = (): void => {
    void servers.stop().finally(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`[bed servers] ${(err as Error).message}\n`);
  process.exit(1);
});

/**
 * `npm run servers`: builds (or finds) the Temporal dev server (tools/temporal-dev, or a temporal CLI) and the MongoDB
 * server without starting them; used by CI to front-load the first build, and handy to warm a new machine.
 */
import { loadToolConfig } from '../lib/config';
import { ensureMongoServer, ensureTemporalCli, ProvisionError } from './servers/binaries';

async function main(): Promise<void> {
  const tools = loadToolConfig();
  const say = (line: string): void => void process.stderr.write(`[servers] ${line}\n`);
  // Both at once, as `npm run dev` builds them (issue 42 point 6).
  const [mongo, temporal] = await Promise.all([ensureMongoServer(tools, say), ensureTemporalCli(tools, say)]);
  say(`MongoDB server: ${mongo.kind} at ${mongo.path}`);
  say(`Temporal dev server: ${temporal}`);
}

main().catch((err: unknown) => {
  process.stderr.write(err instanceof ProvisionError ? `[servers] ${err.message}\n` : `${(err as Error).stack}\n`);
  process.exit(1);
});

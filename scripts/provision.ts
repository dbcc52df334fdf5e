/**
 * `npm run servers`: builds (or finds) the Temporal dev server (tools/temporal-dev, or a temporal CLI) and the MongoDB
 * server without starting them, and the Node the service processes run on (the image's, scripts/lib/pinnedNode.ts:
 * installed into the per-user cache when this node is another major); used by CI to front-load the first build, and
 * handy to warm a new machine so that its first `npm run dev` waits for none of them.
 */
import { loadToolConfig } from '../lib/config';
import { serviceNode } from './lib/pinnedNode';
import { ensureMongoServer, ensureTemporalCli, ProvisionError } from './servers/binaries';

async function main(): Promise<void> {
  const tools = loadToolConfig();
  const say = (line: string): void => void process.stderr.write(`[servers] ${line}\n`);
  // All at once, as `npm run dev` builds them (issue 42 point 6).
  const [mongo, temporal, node] = await Promise.all([
    ensureMongoServer(tools, say),
    ensureTemporalCli(tools, say),
    serviceNode({ say }),
  ]);
  say(`MongoDB server: ${mongo.kind} at ${mongo.path}`);
  say(`Temporal dev server: ${temporal}`);
  say(`Node of the service processes: ${node.version} at ${node.path}`);
}

main().catch((err: unknown) => {
  process.stderr.write(err instanceof ProvisionError ? `[servers] ${err.message}\n` : `${(err as Error).stack}\n`);
  process.exit(1);
});

/**
 * `npm run build:console` (and the tail of `npm run build`, jest's global setup): builds the console when its
 * sources or the API contract changed (scripts/lib/consoleBuild.ts); `--force` builds anyway, `--types` only
 * writes the console's generated types (for `npm run typecheck`).
 */
import { buildConsole, consoleOpenApiDocument, writeConsoleTypes } from './lib/consoleBuild';
import { projectRoot } from './servers/paths';

async function main(): Promise<void> {
  if (process.argv.includes('--types')) {
    await writeConsoleTypes(projectRoot(), consoleOpenApiDocument());
    return;
  }
  const say = (line: string): void => void process.stderr.write(`[console] ${line}\n`);
  const { built, info } = await buildConsole({ force: process.argv.includes('--force'), say });
  if (!built) say(`up to date (first load ${(info.firstLoad.gzipBytes / 1024).toFixed(1)} KiB of gzip JavaScript)`);
}

main().catch((err: unknown) => {
  process.stderr.write(`[console] ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});

/**
 * Chromium for the browser tests (the API reference page, test/api/reference.test.ts): CHROMIUM_PATH, else
 * `chromium` on PATH; else, as root on a Debian-like machine, Debian's package is installed exactly as the README
 * tells a new machine to (`apt-get install -y chromium`). Playwright's own browser download is never used (it
 * needs the internet).
 */
import { spawn } from 'node:child_process';
import type { ToolConfig } from '../lib/config';
import { onPath } from './servers/binaries';

/** What the README tells a new machine to run. */
export const CHROMIUM_INSTALL = 'apt-get update && apt-get install -y --no-install-recommends chromium';

function run(command: string, say: (line: string) => void): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn('sh', ['-c', command], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', () => resolve(false));
    child.on('exit', (code) => {
      if (code !== 0) say(`\`${command}\` failed (${code}): ${err.trim().split('\n').slice(-3).join(' | ')}`);
      resolve(code === 0);
    });
  });
}

/**
 * @param tools CHROMIUM_PATH and PATH.
 * @param say progress printer.
 * @returns the browser's path, or why there is none.
 */
export async function ensureChromium(
  tools: ToolConfig,
  say: (line: string) => void
): Promise<{ path: string } | { missing: string }> {
  if (tools.chromiumPath) return { path: tools.chromiumPath };
  const found = onPath(tools, 'chromium');
  if (found) return { path: found };
  if (process.getuid?.() !== 0 || !onPath(tools, 'apt-get')) {
    return { missing: `chromium is not installed: run \`${CHROMIUM_INSTALL}\` (as root) or set CHROMIUM_PATH` };
  }
  say(`installing Debian's chromium for the browser tests (first run only): ${CHROMIUM_INSTALL}`);
  const started = Date.now();
  if (!(await run(CHROMIUM_INSTALL, say))) {
    return { missing: `\`${CHROMIUM_INSTALL}\` failed: install chromium or set CHROMIUM_PATH` };
  }
  say(`installed chromium in ${Math.round((Date.now() - started) / 1000)} s`);
  const installed = onPath(tools, 'chromium') ?? '/usr/bin/chromium';
  return { path: installed };
}

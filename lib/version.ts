/** Build and version metadata, read once. */
import { readFileSync } from 'node:fs';
import path from 'node:path';

let cached: Record<string, string> | undefined;

/** @returns name, version, node version and start time of this process. */
export function buildInfo(): Record<string, string> {
  if (!cached) {
    const pkgPath = [path.join(__dirname, '..', 'package.json'), path.join(__dirname, '..', '..', 'package.json')].find(
      (p) => {
        try {
          readFileSync(p);
          return true;
        } catch {
          return false;
        }
      }
    );
    const pkg = pkgPath ? (JSON.parse(readFileSync(pkgPath, 'utf8')) as { name: string; version: string }) : undefined;
    cached = {
      name: pkg?.name ?? 'agent-automation-service',
      version: pkg?.version ?? '0.0.0',
      apiVersions: 'v1,current',
      node: process.version,
      startedAt: new Date().toISOString(),
    };
  }
  return cached;
}

/**
 * The documentation's current-surface tables (docs/current-surface.md, docs/mcp.md) cannot drift from the code: the route → scope table is the route
 * declarations, and the error-code table lists exactly the codes lib/errors.ts and api/middlewares/errors.ts
 * define (the one place errors are made: no other source file builds an AppError with its own code).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import type { AppDeps } from '../../../api/deps';
import { currentRoutes } from '../../../api/current';
import { mcpSurfaceRoutes } from '../../../api/mcp';
import { noContract } from '../../helpers/current';
import { testConfig } from '../../helpers/env';

const root = path.resolve(__dirname, '../../..');
/** docs/current-surface.md and docs/mcp.md hold the generated tables between their markers. */
const readme = ['current-surface.md', 'mcp.md'].map((f) => readFileSync(path.join(root, 'docs', f), 'utf8')).join('\n');

/** @returns the cells of the table between `<!-- name:start -->` and `<!-- name:end -->`, header excluded. */
function tableRows(name: string): string[][] {
  const match = new RegExp(`<!-- ${name}:start -->([\\s\\S]*?)<!-- ${name}:end -->`).exec(readme);
  expect(match).not.toBeNull();
  return match![1]
    .split('\n')
    .filter((l) => l.startsWith('|'))
    .slice(2)
    .map((l) =>
      l
        .slice(1, -1)
        .split('|')
        .map((c) => c.trim())
    );
}

it('the documented route → scope table is the current surface’s route declarations', () => {
  const expected = currentRoutes({ config: testConfig() } as unknown as AppDeps, noContract).map((r) => [
    r.method.toUpperCase(),
    `\`/api${r.path.replace(/:([A-Za-z]+)/g, '{$1}')}\``,
    r.scope ? `\`${r.scope}\`` : 'public',
    r.summary,
  ]);
  const table = (rows: string[][]): string => rows.map((r) => `| ${r.join(' | ')} |`).join('\n');
  expect(table(tableRows('route-scopes'))).toBe(table(expected));
});

it('the documented MCP and OAuth route table is their route declarations', () => {
  const expected = mcpSurfaceRoutes({ config: testConfig() } as unknown as AppDeps).map((r) => [
    r.method.toUpperCase(),
    `\`${r.path.replace(/:([A-Za-z]+)/g, '{$1}')}\``,
    r.scope ? `\`${r.scope}\`` : 'public',
    r.summary,
  ]);
  const table = (rows: string[][]): string => rows.map((r) => `| ${r.join(' | ')} |`).join('\n');
  expect(table(tableRows('mcp-routes'))).toBe(table(expected));
});

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = path.join(dir, f);
    if (statSync(p).isDirectory()) return sourceFiles(p);
    return p.endsWith('.ts') ? [p] : [];
  });
}

it('the documented error-code table lists every code, and only lib/errors.ts and the error middleware make codes', () => {
  const onePlace = ['lib/errors.ts', 'api/middlewares/errors.ts'];
  const codes = new Set<string>();
  for (const f of onePlace) {
    for (const m of readFileSync(path.join(root, f), 'utf8').matchAll(/\(\s*(\d{3}),\s*'([a-z_]+)'/g)) codes.add(m[2]);
  }
  const elsewhere = ['api', 'commands', 'lib', 'activities', 'workflows', 'worker', 'scripts']
    .flatMap((d) => sourceFiles(path.join(root, d)))
    .filter((f) => !onePlace.includes(path.relative(root, f)))
    .filter((f) => /new AppError\(/.test(readFileSync(f, 'utf8')))
    .map((f) => path.relative(root, f));
  expect(elsewhere).toEqual([]);
  const documented = tableRows('error-codes').map((r) => r[1].replace(/`/g, ''));
  expect([...documented].sort()).toEqual([...codes].sort());
});

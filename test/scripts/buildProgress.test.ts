/**
 * The first start's Go builds (issue 42 point 6): the flags Go is given, the one progress line and its estimate,
 * and cache keys that still find the binaries already built.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadToolConfig } from '../../lib/config';
import { ensureMongoServer, ensureTemporalCli, GO_BUILD_FLAGS, onPath } from '../../scripts/servers/binaries';
import { buildEstimateMs, FIXED_ESTIMATES_MS, humanDuration, progressLine } from '../../scripts/servers/progress';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'aas-build-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

it('one line for every build under way: what, elapsed since the first began, the longest estimated rest', () => {
  const t0 = 1_000_000;
  const builds = [
    { label: 'FerretDB v1.24.2', started: t0, estimateMs: 110_000 },
    { label: 'Temporal dev server v1.29.1', started: t0 + 1_000, estimateMs: 370_000 },
  ];
  expect(progressLine(builds, t0 + 100_000)).toBe(
    'building FerretDB v1.24.2 and Temporal dev server v1.29.1: 1 min 40 s elapsed, about 4 min 40 s left' // 271 s, up to the next 10 s
  );
  expect(progressLine(builds.slice(1), t0 + 400_000)).toBe(
    'building Temporal dev server v1.29.1: 6 min 39 s elapsed, almost done' // it began 1 s after the first
  );
  expect(humanDuration(45_000)).toBe('45 s');
  expect(humanDuration(185_000)).toBe('3 min 05 s');
});

it("the estimate is the last build's recorded duration on this machine, else the fixed one", () => {
  expect(buildEstimateMs(dir, 'temporal-dev')).toBe(FIXED_ESTIMATES_MS['temporal-dev']);
  writeFileSync(path.join(dir, 'build-times.json'), JSON.stringify({ 'temporal-dev': 250_000 }));
  expect(buildEstimateMs(dir, 'temporal-dev')).toBe(250_000);
  expect(buildEstimateMs(dir, 'ferretdb')).toBe(FIXED_ESTIMATES_MS.ferretdb);
});

it('Go takes the flags: no local paths and no symbols in the binary', () => {
  const tools = loadToolConfig();
  const go = onPath(tools, 'go') ?? ['/usr/local/go/bin/go', '/usr/lib/go/bin/go'].find((g) => g);
  writeFileSync(path.join(dir, 'go.mod'), 'module example.com/probe\n\ngo 1.22\n');
  writeFileSync(path.join(dir, 'main.go'), 'package main\n\nfunc main() {}\n');
  const env = { ...process.env, GOFLAGS: GO_BUILD_FLAGS, CGO_ENABLED: '0', GOCACHE: path.join(dir, 'cache') };
  const built = spawnSync(go!, ['build', '-o', 'probe', '.'], { cwd: dir, env, encoding: 'utf8' });
  expect([built.status, built.stderr]).toEqual([0, '']);
  // -trimpath is recorded in the build information (which then leaves -ldflags out); -s strips the symbol table.
  expect(spawnSync(go!, ['version', '-m', 'probe'], { cwd: dir, encoding: 'utf8' }).stdout).toMatch(
    /build\t-trimpath=true/
  );
  const nm = spawnSync(go!, ['tool', 'nm', 'probe'], { cwd: dir, encoding: 'utf8' });
  expect(nm.stdout).toBe('');
  expect(nm.stderr).toMatch(/no symbols/);
}, 120_000);

it('the binaries already cached are found under the same keys: nothing is built', async () => {
  const said: string[] = [];
  await ensureMongoServer(loadToolConfig(), (line) => said.push(line));
  await ensureTemporalCli(loadToolConfig(), (line) => said.push(line));
  expect(said).toEqual([]);
});

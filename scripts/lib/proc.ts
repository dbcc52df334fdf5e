/**
 * What Linux's /proc says about a process: its parent and command line, its descendants, its resident memory and
 * the CPU time it used (the benchmarks' per-process figures, the fault tests' process lookups). Linux only: on
 * another system each reader answers "unknown" (undefined, empty).
 */
import { readdirSync, readFileSync } from 'node:fs';

/** A process as /proc shows it. */
export interface StackProcess {
  pid: number;
  ppid: number;
  /** Command line, arguments joined by spaces. */
  cmd: string;
}

/** Resident memory of a process, from /proc/<pid>/status, in KiB. */
export interface MemoryUse {
  rssKib?: number;
  peakKib?: number;
}

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ: 100 on every Linux ABI Node runs on). */
const TICKS_PER_SECOND = 100;

/**
 * @param pid a process.
 * @returns the fields of /proc/<pid>/stat after the command name (field 3, the state, first), or undefined.
 */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined; // gone meanwhile
  }
}

/**
 * @param pid a process.
 * @returns its parent and command line, or undefined when it is gone.
 */
export function readProcess(pid: number): StackProcess | undefined {
  const fields = statFields(pid);
  if (!fields) return undefined;
  try {
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    return { pid, ppid: Number(fields[1]), cmd };
  } catch {
    return undefined;
  }
}

/**
 * @param pid a process.
 * @returns its state letter (`R`, `S`, `Z`…), `X` when it is gone.
 */
export function processState(pid: number): string {
  return statFields(pid)?.[0] ?? 'X';
}

/**
 * Every living descendant of a process.
 * @param rootPid the ancestor.
 * @returns the descendants.
 */
export function descendants(rootPid: number): StackProcess[] {
  const all = readdirSync('/proc')
    .filter((d) => /^\d+$/.test(d))
    .map((d) => readProcess(Number(d)))
    .filter((p): p is StackProcess => p !== undefined && p.cmd !== '');
  const found: StackProcess[] = [];
  const parents = new Set([rootPid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const p of all) {
      if (parents.has(p.ppid) && !parents.has(p.pid)) {
        parents.add(p.pid);
        found.push(p);
        grew = true;
      }
    }
  }
  return found;
}

/**
 * Reads VmRSS (resident now) and VmHWM (peak resident) of a process.
 * @param pid the process.
 * @returns the sizes in KiB.
 */
export function memoryOf(pid: number | undefined): MemoryUse {
  if (pid === undefined) return {};
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string): number | undefined => {
      const m = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
      return m ? Number(m[1]) : undefined;
    };
    return { rssKib: field('VmRSS'), peakKib: field('VmHWM') };
  } catch {
    return {};
  }
}

/**
 * CPU time (user + system) used so far by a process and everything below it: the living descendants' own times
 * and, for those that ended, what their parents collected (cutime, cstime), e.g. PostgreSQL's backends.
 * @param rootPid the process.
 * @returns seconds, or undefined when the process is gone (or not on Linux).
 */
export function cpuSecondsOf(rootPid: number | undefined): number | undefined {
  if (rootPid === undefined) return undefined;
  const ticks = (pid: number, withChildren: boolean): number => {
    // Fields 14-17 (utime, stime, cutime, cstime) are at indexes 11-14 of what follows the command name.
    const f = statFields(pid);
    if (!f) return 0;
    return Number(f[11]) + Number(f[12]) + (withChildren ? Number(f[13]) + Number(f[14]) : 0);
  };
  if (!statFields(rootPid)) return undefined;
  const total = [rootPid, ...descendants(rootPid).map((p) => p.pid)].reduce((sum, pid) => sum + ticks(pid, true), 0);
  return total / TICKS_PER_SECOND;
}

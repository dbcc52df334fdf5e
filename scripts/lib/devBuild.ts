/**
 * The service's JavaScript for `npm run dev` (and the benchmarks, which start the service the same way): every
 * TypeScript source that `npm run build` compiles (tsconfig.build.json) is transpiled into dist/ with the same
 * layout and TypeScript's own emit, file by file and without type checking (what tsx did when each module loaded;
 * `npm run typecheck` checks types). Only sources changed since their last transpile are transpiled again. The service
 * processes then run plain node: no TypeScript loader in them (it held about 45 MiB of each one's resident memory:
 * docs/benchmarks.md "Memory of the service process").
 */
import { mkdirSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

/**
 * @param root the project root (holds tsconfig.build.json).
 * @returns the output directory (dist/), and how many files were transpiled now out of how many.
 */
export function transpileForDev(root: string): { outDir: string; written: number; total: number } {
  const configFile = path.join(root, 'tsconfig.build.json');
  const read = ts.readConfigFile(configFile, (f) => ts.sys.readFile(f));
  if (read.error) throw new Error(ts.flattenDiagnosticMessageText(read.error.messageText, '\n'));
  const parsed = ts.parseJsonConfigFileContent(read.config, ts.sys, root, undefined, configFile);
  const outDir = parsed.options.outDir ?? path.join(root, 'dist');
  const rootDir = parsed.options.rootDir ?? root;
  // Source maps are left out: node would load them only with --enable-source-maps, which costs the memory saved.
  const compilerOptions: ts.CompilerOptions = { ...parsed.options, sourceMap: false, inlineSourceMap: false };
  let written = 0;
  const sources = parsed.fileNames.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'));
  for (const file of sources) {
    const out = path.join(outDir, path.relative(rootDir, file)).replace(/\.ts$/, '.js');
    // The JavaScript carries its source's modification time: any other time (a changed source, one restored with
    // an older time, or `npm run build`'s output) is transpiled again.
    const { mtime } = statSync(file);
    let outTime: number | undefined;
    try {
      outTime = statSync(out).mtimeMs;
    } catch {
      // not transpiled yet
    }
    // (to the millisecond: setting a time rounds it)
    if (outTime !== undefined && Math.abs(outTime - mtime.getTime()) < 1) continue;
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), { compilerOptions, fileName: file });
    mkdirSync(path.dirname(out), { recursive: true });
    // Written beside it and renamed: a process starting meanwhile (another launcher, a test) never loads half a file.
    const tmp = `${out}.${process.pid}.tmp`;
    writeFileSync(tmp, outputText);
    utimesSync(tmp, mtime, mtime);
    renameSync(tmp, out);
    written++;
  }
  return { outDir, written, total: sources.length };
}

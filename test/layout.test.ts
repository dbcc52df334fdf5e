/**
 * The import graph of the service folders [docs/decisions.md "Layout"]: no circle (type imports count: they tie
 * the files as much for a reader), and lib/ imports no other project folder, presenters/ only models/ and lib/,
 * models/ only lib/ and the pure modules of workflows/.
 * Read from the code's own import and export statements (TypeScript's preProcessFile), so a new circle fails here.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';

const ROOT = path.resolve(__dirname, '..');
const FOLDERS = ['api', 'activities', 'commands', 'models', 'presenters', 'workflows', 'lib', 'worker'];

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const rel = `${dir}/${name}`;
    if (statSync(path.join(ROOT, rel)).isDirectory()) return sourceFiles(rel);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** @returns the project files a file imports (relative specifiers resolved to a file of the graph). */
function importsOf(file: string, known: Set<string>): string[] {
  const info = ts.preProcessFile(readFileSync(path.join(ROOT, file), 'utf8'), true, true);
  const out = new Set<string>();
  for (const { fileName } of info.importedFiles) {
    if (!fileName.startsWith('.')) continue;
    const base = path.posix.normalize(path.posix.join(path.posix.dirname(file), fileName)).replace(/\.js$/, '');
    const target = [`${base}.ts`, `${base}/index.ts`].find((f) => known.has(f));
    if (target) out.add(target);
  }
  return [...out];
}

/** Strongly connected components of more than one file, or of a file that imports itself (Tarjan). */
function circles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string): void => {
    indices.set(v, index);
    low.set(v, index);
    index += 1;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, indices.get(w)!));
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!indices.has(v)) visit(v);
  return found;
}

const files = FOLDERS.flatMap(sourceFiles);
const known = new Set(files);
const graph = new Map(files.map((f) => [f, importsOf(f, known)]));

it('reads the service folders', () => {
  expect(files.length).toBeGreaterThan(200);
  expect(graph.get('api/app.ts')).toEqual(expect.arrayContaining(['api/deps.ts', 'api/route.ts']));
});

it('has no import circle', () => {
  expect(circles(graph)).toEqual([]);
});

it('finds a circle when there is one', () => {
  const g = new Map([
    ['a.ts', ['b.ts']],
    ['b.ts', ['c.ts']],
    ['c.ts', ['a.ts']],
    ['d.ts', ['a.ts']],
  ]);
  expect(circles(g)).toEqual([['a.ts', 'b.ts', 'c.ts']]);
});

it('lib/ imports no other project folder; presenters/ only models/ and lib/', () => {
  const outside = (from: string, allowed: string[]): string[] =>
    files
      .filter((f) => f.startsWith(`${from}/`))
      .flatMap((f) =>
        graph
          .get(f)!
          .filter((t) => !allowed.some((a) => t.startsWith(`${a}/`)))
          .map((t) => `${f} -> ${t}`)
      );
  expect(outside('lib', ['lib'])).toEqual([]);
  expect(outside('presenters', ['presenters', 'models', 'lib'])).toEqual([]);
});

it("models/ import only lib/ and the pure modules of workflows/ (a job's statuses)", () => {
  const imported = files.filter((f) => f.startsWith('models/')).flatMap((f) => graph.get(f)!.map((t) => [f, t]));
  expect(
    imported
      .filter(([, t]) => !['models/', 'lib/', 'workflows/'].some((a) => t.startsWith(a)))
      .map((e) => e.join(' -> '))
  ).toEqual([]);
  // What a model takes from workflows/ is data the workflows own, in a file that imports no project file itself.
  const fromWorkflows = imported.filter(([, t]) => t.startsWith('workflows/')).map(([, t]) => t);
  expect(fromWorkflows.filter((t) => graph.get(t)!.length > 0)).toEqual([]);
});

/**
 * The console's place in the layout (ARCHITECTURE.md §3): console/ imports nothing from the server's folders and
 * nothing of the server imports console/; its packages are devDependencies of its own workspace, so a production
 * install (`npm ci --omit=dev`) carries none of them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { ROOT } from '../helpers/processes';

const SERVER = ['api', 'activities', 'commands', 'lib', 'models', 'presenters', 'scripts', 'worker', 'workflows'];

function sources(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name.startsWith('dist') ? [] : sources(rel);
    return /\.(ts|tsx|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [rel] : [];
  });
}

/** @returns the project folder (first path segment) each relative import of the file lands in. */
function importedFolders(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(path.join(ROOT, file), 'utf8'), true, true);
  return info.importedFiles
    .map((i) => i.fileName)
    .filter((f) => f.startsWith('.'))
    .map((f) => path.relative(ROOT, path.resolve(ROOT, path.dirname(file), f)).split(path.sep)[0]);
}

it('console/ imports nothing from the server’s folders', () => {
  const files = sources('console');
  expect(files.length).toBeGreaterThan(10);
  const outside = files.flatMap((f) =>
    importedFolders(f)
      .filter((d) => d !== 'console')
      .map((d) => `${f} → ${d}`)
  );
  expect(outside).toEqual([]);
});

it('nothing of the server imports console/', () => {
  const into = SERVER.flatMap(sources).flatMap((f) =>
    importedFolders(f)
      .filter((d) => d === 'console')
      .map(() => f)
  );
  expect(into).toEqual([]);
});

it('the console’s packages are devDependencies of its workspace', () => {
  const root = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    workspaces: string[];
    dependencies: Record<string, string>;
  };
  const consolePkg = JSON.parse(readFileSync(path.join(ROOT, 'console', 'package.json'), 'utf8')) as {
    dependencies?: object;
    devDependencies: Record<string, string>;
  };
  expect(root.workspaces).toEqual(['console']);
  expect(consolePkg.dependencies).toBeUndefined();
  for (const name of ['react', 'react-dom', 'vite', '@mantine/core', 'react-router', '@tanstack/react-query'])
    expect(consolePkg.devDependencies[name]).toBeDefined();
  // croner is the one package both sides use on purpose: the console previews a mission's next runs with the library
  // (and version) the server validates the schedule with. Every other console package stays out of the production
  // install.
  const shared = ['croner'];
  for (const name of shared) expect(consolePkg.devDependencies[name]).toBe(root.dependencies[name]);
  for (const name of Object.keys(consolePkg.devDependencies))
    if (!shared.includes(name)) expect(root.dependencies[name]).toBeUndefined();
});

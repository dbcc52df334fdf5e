/** The workspace pages' paths (lib/workspacePaths.ts). */
import { breadcrumbs, fileContentUrl, formatSize, joinPath, normalizeFolder } from './workspacePaths';

it('normalizes a folder as the API takes it', () => {
  expect(normalizeFolder(null)).toBe('');
  expect(normalizeFolder('.')).toBe('');
  expect(normalizeFolder('/docs//notes/')).toBe('docs/notes');
  expect(normalizeFolder('./docs/./a')).toBe('docs/a');
});

it('gives breadcrumbs from the root', () => {
  expect(breadcrumbs('')).toEqual([{ name: 'Files', path: '' }]);
  expect(breadcrumbs('docs/notes')).toEqual([
    { name: 'Files', path: '' },
    { name: 'docs', path: 'docs' },
    { name: 'notes', path: 'docs/notes' },
  ]);
});

it('joins a folder and a name, and builds the content URL with everything encoded', () => {
  expect(joinPath('', 'a.txt')).toBe('a.txt');
  expect(joinPath('docs', 'a b.txt')).toBe('docs/a b.txt');
  expect(fileContentUrl('spc_1', 'docs/a b&c.txt')).toBe(
    '/api/workspaces/spc_1/files/content?path=docs%2Fa%20b%26c.txt'
  );
});

it('formats sizes for a person', () => {
  expect(formatSize(0)).toBe('0 B');
  expect(formatSize(1023)).toBe('1023 B');
  expect(formatSize(1536)).toBe('1.5 KB');
  expect(formatSize(20 * 1024 * 1024)).toBe('20 MB');
});

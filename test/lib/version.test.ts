/** The commit of a checkout, read from its git files: a plain clone, and a git worktree (whose .git is a file). */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gitCommitOf } from '../../lib/version';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);

function layout(files: Record<string, string>): string {
  const root = mkdtempSync(path.join(os.tmpdir(), 'aas-version-'));
  for (const [file, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    writeFileSync(path.join(root, file), text);
  }
  return root;
}

it('a clone: HEAD names a branch, found loose or in packed-refs; a detached HEAD is the commit', () => {
  expect(gitCommitOf(layout({ '.git/HEAD': 'ref: refs/heads/main\n', '.git/refs/heads/main': `${A}\n` }))).toBe(A);
  expect(
    gitCommitOf(layout({ '.git/HEAD': 'ref: refs/heads/main\n', '.git/packed-refs': `# pack\n${B} refs/heads/main\n` }))
  ).toBe(B);
  expect(gitCommitOf(layout({ '.git/HEAD': `${A}\n` }))).toBe(A);
});

it('a worktree: .git names its git directory, whose commondir holds the refs', () => {
  const root = layout({
    'main/.git/refs/heads/feature': `${B}\n`,
    'main/.git/worktrees/wt/HEAD': 'ref: refs/heads/feature\n',
    'main/.git/worktrees/wt/commondir': '../..\n',
    'wt/.git': 'gitdir: ../main/.git/worktrees/wt\n',
  });
  expect(gitCommitOf(path.join(root, 'wt'))).toBe(B);
});

it('no readable git directory: undefined', () => {
  expect(gitCommitOf(layout({ 'README.md': 'x' }))).toBeUndefined();
  expect(gitCommitOf(layout({ '.git': 'not a pointer' }))).toBeUndefined();
});

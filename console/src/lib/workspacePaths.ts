/** The workspace pages' paths: folders as the files API names them (relative, `/` separators, `''` the root). */

/**
 * @param path a folder as the page's `?path=` holds it (may be empty, `.`, or carry stray slashes).
 * @returns the folder as the API takes it: no leading, trailing or doubled slashes, `''` for the root.
 */
export function normalizeFolder(path: string | null): string {
  if (!path) return '';
  return path
    .split('/')
    .filter((s) => s !== '' && s !== '.')
    .join('/');
}

/**
 * @param folder a normalized folder.
 * @returns its breadcrumbs from the root: each with its name and the folder it leads to.
 */
export function breadcrumbs(folder: string): { name: string; path: string }[] {
  const parts = folder ? folder.split('/') : [];
  return [{ name: 'Files', path: '' }, ...parts.map((name, i) => ({ name, path: parts.slice(0, i + 1).join('/') }))];
}

/**
 * @param folder a normalized folder.
 * @param name a file's name.
 * @returns the file's path in the workspace.
 */
export function joinPath(folder: string, name: string): string {
  return folder ? `${folder}/${name}` : name;
}

/**
 * @param workspaceId the workspace.
 * @param path a file of it.
 * @returns the URL of its bytes (the files API's read route; the session cookie goes with it).
 */
export function fileContentUrl(workspaceId: string, path: string): string {
  return `/api/workspaces/${encodeURIComponent(workspaceId)}/files/content?path=${encodeURIComponent(path)}`;
}

/**
 * @param bytes a size.
 * @returns it for a person (B, KB, MB, GB; 1 KB = 1024 B).
 */
export function formatSize(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB'];
  let n = bytes;
  let u = 0;
  while (n >= 1024 && u < units.length - 1) {
    n /= 1024;
    u += 1;
  }
  return u === 0 ? `${n} B` : `${n.toFixed(n < 10 ? 1 : 0)} ${units[u]}`;
}

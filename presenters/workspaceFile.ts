/** Workspace files, their previews, and share and app links → public JSON (the current surface's file routes). */
import type { Preview } from '../lib/contentTypes';
import type { FileEntry } from '../lib/fileStorage';
import type { WorkspaceLinkDoc } from '../models';

/** A file or directory of a workspace, as the file routes show it. */
export function presentEntry(e: FileEntry): Record<string, unknown> {
  return { path: e.path, name: e.name, type: e.type, size: e.size, modified_at: e.modifiedAt.toISOString() };
}

/** A share or app link, with its public URL. */
export function presentLink({ link, url }: { link: WorkspaceLinkDoc; url: string }): Record<string, unknown> {
  return {
    id: link._id,
    ...(link.kind === 'app' ? { name: link.name } : {}),
    path: link.path,
    url,
    expires_at: link.expiresAt ? link.expiresAt.toISOString() : null,
    created_at: link.createdAt.toISOString(),
  };
}

/** A file's preview (text, an image's size and thumbnail). */
export function presentPreview(p: Preview): Record<string, unknown> {
  return {
    path: p.path,
    name: p.name,
    size: p.size,
    modified_at: p.modifiedAt.toISOString(),
    content_type: p.contentType,
    kind: p.kind,
    ...(p.language !== undefined ? { language: p.language } : {}),
    ...(p.text !== undefined ? { text: p.text, truncated: p.truncated ?? false } : {}),
    ...(p.image ? { image: p.image } : {}),
    ...(p.thumbnail
      ? {
          thumbnail: {
            content_type: p.thumbnail.contentType,
            width: p.thumbnail.width,
            height: p.thumbnail.height,
            data_base64: p.thumbnail.base64,
          },
        }
      : {}),
  };
}

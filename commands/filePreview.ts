/**
 * File previews [docs/decisions.md "Previews"], made on request (nothing is stored): images → dimensions and a PNG
 * thumbnail (sharp, at most 256×256, inside a pixel budget); text, Markdown and source code → the first `max_bytes`
 * bytes as UTF-8 with the detected type; anything else → metadata only.
 */
import type { AuthContext } from './tokens';
import { findWorkspace, type FilesDeps } from './workspaceFiles';
import { NotFoundError } from '../lib/errors';
import { codeLanguageOf, isMarkdown, mediaTypeOf, type Preview, type PreviewKind } from '../lib/contentTypes';
import { parseWorkspacePath } from '../lib/workspace';

/** Default and largest number of bytes of text a preview returns. */
export const PREVIEW_DEFAULT_BYTES = 16 * 1024;
export const PREVIEW_MAX_BYTES = 256 * 1024;
/** Largest image decoded for a thumbnail (bytes of the file, pixels of the image). */
const IMAGE_MAX_BYTES = 25 * 1024 * 1024;
const IMAGE_MAX_PIXELS = 50_000_000;
/** Thumbnails fit in this square. */
export const THUMBNAIL_SIZE = 256;

/** @returns the text when the bytes are UTF-8 without NUL (a cut character at the end is dropped), else null. */
function asText(head: Buffer, truncated: boolean): string | null {
  if (head.includes(0)) return null;
  try {
    // stream: a multi-byte character cut by the byte limit is held back instead of failing.
    return new TextDecoder('utf-8', { fatal: true }).decode(head, { stream: truncated });
  } catch {
    return null;
  }
}

async function imagePreview(bytes: Buffer): Promise<Pick<Preview, 'image' | 'thumbnail' | 'contentType'> | undefined> {
  // Loaded on first use: a process that never previews an image does not hold the library (about 19 MiB).
  const { default: sharp } = await import('sharp');
  try {
    const input = sharp(bytes, { limitInputPixels: IMAGE_MAX_PIXELS });
    const meta = await input.metadata();
    if (!meta.format || !meta.width || !meta.height) return undefined;
    const { data, info } = await input
      .rotate()
      .resize(THUMBNAIL_SIZE, THUMBNAIL_SIZE, { fit: 'inside', withoutEnlargement: true })
      .png()
      .toBuffer({ resolveWithObject: true });
    return {
      contentType: `image/${meta.format === 'jpeg' ? 'jpeg' : meta.format}`,
      image: { format: meta.format, width: meta.width, height: meta.height },
      thumbnail: { contentType: 'image/png', width: info.width, height: info.height, base64: data.toString('base64') },
    };
  } catch {
    return undefined; // not an image sharp can decode (or over the pixel budget): metadata only
  }
}

/**
 * @param deps storage.
 * @param auth the caller.
 * @param id workspace id.
 * @param rawPath the file.
 * @param maxBytes bytes of text to return.
 * @returns the preview.
 */
export async function previewFile(
  deps: FilesDeps,
  auth: AuthContext,
  id: string,
  rawPath: string,
  maxBytes = PREVIEW_DEFAULT_BYTES
): Promise<Preview> {
  const rel = parseWorkspacePath(rawPath);
  const { ws } = await findWorkspace(auth, id);
  const entry = await deps.storage.stat(ws, rel);
  if (!entry || entry.type !== 'file') throw new NotFoundError('File not found');
  const base: Preview = {
    path: rel,
    name: entry.name,
    size: entry.size,
    modifiedAt: entry.modifiedAt,
    contentType: mediaTypeOf(entry.name),
    kind: 'binary',
  };
  const head = await deps.storage.readHead(ws, rel, Math.min(entry.size, Math.max(maxBytes, 64)));
  // Images are recognized by their content (sharp reads the signature), whatever the extension says.
  if (entry.size <= IMAGE_MAX_BYTES && (base.contentType.startsWith('image/') || asText(head, true) === null)) {
    const whole = await deps.storage.readHead(ws, rel, entry.size);
    const image = await imagePreview(whole);
    if (image) return { ...base, ...image, kind: 'image' };
  }
  const truncated = entry.size > maxBytes;
  const text = asText(head.subarray(0, maxBytes), truncated);
  if (text === null) return base;
  const language = codeLanguageOf(entry.name);
  const kind: PreviewKind = isMarkdown(entry.name) ? 'markdown' : language ? 'code' : 'text';
  const contentType = base.contentType === 'application/octet-stream' ? 'text/plain' : base.contentType;
  return { ...base, contentType, kind, ...(kind === 'code' ? { language } : {}), text, truncated };
}

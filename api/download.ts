/**
 * Answering a stored file's bytes (workspace files and their shares, media): its type as the caller knows it,
 * inline only for types safe to show (lib/contentTypes.ts `dispositionFor`), never sniffed, never scripted.
 */
import type { Readable } from 'node:stream';
import { contentTypeHeader, dispositionFor } from '../lib/contentTypes';
import type { AppContext } from './context';

/** The policy of every file answer that is not an app page: nothing in it may run. */
export const FILE_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox";

/**
 * @param ctx the context.
 * @param file the file's name (for Content-Disposition), media type, size and content.
 * @param cache the Cache-Control value.
 */
export function sendFile(
  ctx: AppContext,
  file: { name: string; mediaType: string; size: number; content: Readable },
  cache: string
): void {
  ctx.status = 200;
  ctx.type = contentTypeHeader(file.mediaType);
  ctx.length = file.size;
  ctx.attachment(file.name, { type: dispositionFor(file.mediaType) });
  ctx.type = contentTypeHeader(file.mediaType); // attachment() sets the type from the name too: ours wins
  ctx.set('X-Content-Type-Options', 'nosniff');
  ctx.set('Content-Security-Policy', FILE_CSP);
  ctx.set('Cache-Control', cache);
  ctx.body = file.content;
}

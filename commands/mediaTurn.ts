/**
 * The user turn of an execution that references media [docs/decisions.md "Media"], built when the model is called
 * (the execution record keeps only the ids; the bytes are read here, never carried through Temporal): each medium
 * in the order of `mediaIds`, then the message. Images become image blocks, PDFs document blocks (Anthropic; the
 * api refused them for other providers), text files a text block framed with the file's name:
 *
 * ```
 * <attached-file name="notes.md" type="text/markdown">
 * …the file's text…
 * </attached-file>
 * ```
 *
 * A text file's text is cut at {@link MEDIA_TEXT_MAX_CHARS} characters, with a note saying how much is left out. A
 * medium deleted since the execution started is a note that it is no longer available.
 */
import { mediaDeps } from './media';
import { attribute, cut } from './systemPrompt';
import type { Config } from '../lib/config';
import { MEDIA_TYPES, type MediaType } from '../lib/mediaTypes';
import type { ModelContentBlock, ModelMessage } from '../lib/providers';
import { Media, type MediaDoc } from '../models';

/** Characters of one text file the model gets at most. */
export const MEDIA_TEXT_MAX_CHARS = 100_000;

/** What of an execution the user turn is made of. */
export interface TurnSource {
  organizationId: string;
  input?: { message?: string | null; mediaIds?: string[] | null } | null;
}

/**
 * @param media the medium.
 * @param content its bytes.
 * @returns the block the model gets for it.
 */
export function mediaBlock(media: Pick<MediaDoc, 'name' | 'contentType'>, content: Buffer): ModelContentBlock {
  const type = media.contentType as MediaType;
  const kind = MEDIA_TYPES[type];
  if (kind === 'image') return { type: 'image', mediaType: type as 'image/png', data: content.toString('base64') };
  if (kind === 'document')
    return { type: 'document', mediaType: 'application/pdf', data: content.toString('base64'), title: media.name };
  const text = content.toString('utf8').replace(/^\uFEFF/, '');
  const kept = cut(text, MEDIA_TEXT_MAX_CHARS);
  const note =
    kept.length < text.length
      ? `\n[The file is cut here: ${text.length - kept.length} of its ${text.length} characters are left out.]`
      : '';
  return {
    type: 'text',
    text: `<attached-file name="${attribute(media.name)}" type="${type}">\n${kept}${note}\n</attached-file>`,
  };
}

/**
 * @param exec the execution (its organization, message and media ids).
 * @param config the media settings.
 * @returns the user turn the model gets: the message alone, or the media's blocks then the message.
 */
export async function userTurn(exec: TurnSource, config: Pick<Config, 'media'>): Promise<ModelMessage> {
  const message = exec.input?.message ?? '';
  const ids = exec.input?.mediaIds ?? [];
  if (ids.length === 0) return { role: 'user', content: message };
  const { storage } = mediaDeps(config);
  const found = await Media.find({ $or: ids.map((_id) => ({ _id })) }).lean<MediaDoc[]>();
  const mine = new Map(found.filter((m) => m.organizationId === exec.organizationId).map((m) => [m._id, m]));
  const blocks = await Promise.all(
    ids.map(async (id): Promise<ModelContentBlock> => {
      const media = mine.get(id);
      const content = media ? await storage.read(media.organizationId, media._id) : null;
      if (!media || !content)
        return { type: 'text', text: `[An attached file (${id}) is no longer available: it was deleted.]` };
      return mediaBlock(media, content);
    })
  );
  return { role: 'user', content: [...blocks, { type: 'text', text: message }] };
}

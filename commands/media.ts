/**
 * Media (/api/v1/media) [docs/decisions.md "Media"]: files an organization uploads for its agents' executions.
 * Every member of the organization may upload, read, list and download them; the uploader and the owners/admins may
 * delete one (other members 403); another organization's medium is 404. The type is read from the content
 * (lib/mediaTypes.ts); the bytes are kept by lib/mediaStorage.ts, the metadata in models/Media.ts.
 */
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { AuthContext } from './tokens';
import type { Config } from '../lib/config';
import {
  ForbiddenError,
  NotFoundError,
  StorageLimitError,
  UnsupportedMediaTypeError,
  ValidationError,
} from '../lib/errors';
import { WriteLimitExceeded } from '../lib/fileStorage';
import { newId } from '../lib/ids';
import { MediaStorage, type ReceivedFile } from '../lib/mediaStorage';
import { detectMediaType, MEDIA_TYPES, MediaTypeRefused, type MediaType } from '../lib/mediaTypes';
import { insertDocument } from '../lib/mongo';
import { paginate } from '../lib/pagination';
import type { ResolvedModel } from '../lib/providers';
import { Media, type MediaDoc } from '../models';

const NOT_FOUND = 'Media not found';

/** Media one execution may reference. */
export const MAX_EXECUTION_MEDIA = 10;
/**
 * Bytes of media one execution may reference together: base64 makes them a third larger, and a model request
 * must stay under the providers' request size (32 MB at Anthropic).
 */
export const MAX_EXECUTION_MEDIA_BYTES = 20 * 1024 * 1024;
/** Longest file name kept (longer ones are cut, keeping the extension when it is short). */
export const MAX_MEDIA_NAME = 255;

/** What the media commands need: the storage and the upload cap (lib/config.ts `media`). */
export interface MediaDeps {
  storage: MediaStorage;
  maxBytes: number;
}

/** One storage per media directory: the api's routes and the worker's activities each make theirs. */
const storages = new Map<string, MediaStorage>();

/**
 * @param config the media settings.
 * @returns the storage under MEDIA_DIR and the upload cap.
 */
export function mediaDeps(config: Pick<Config, 'media'>): MediaDeps {
  let storage = storages.get(config.media.dir);
  if (!storage) storages.set(config.media.dir, (storage = new MediaStorage(config.media.dir)));
  return { storage, maxBytes: config.media.maxBytes };
}

/** 415 in the surface's error shape. */
function unsupported(message: string): UnsupportedMediaTypeError {
  return new UnsupportedMediaTypeError(message);
}

/**
 * @param raw the name the client gave (busboy keeps only its last path segment).
 * @returns the name to keep: control characters removed, at most MAX_MEDIA_NAME characters.
 * @throws ValidationError when nothing is left.
 */
function cleanName(raw: string): string {
  // eslint-disable-next-line no-control-regex
  const name = raw.replace(/[\u0000-\u001f\u007f]/g, '').trim();
  if (name === '') throw new ValidationError('Missing required field: file (a file part with a filename)');
  if (name.length <= MAX_MEDIA_NAME) return name;
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
  return name.slice(0, MAX_MEDIA_NAME - ext.length) + ext;
}

/**
 * Receives an upload's bytes into a temporary file (within the cap).
 * @param deps storage and cap.
 * @param auth the caller.
 * @param body the file's bytes.
 * @returns the received file, to pass to {@link createMedia} or discard.
 * @throws StorageLimitError (413) past MEDIA_MAX_BYTES: nothing is kept.
 */
export async function receiveMedia(deps: MediaDeps, auth: AuthContext, body: Readable): Promise<ReceivedFile> {
  try {
    return await deps.storage.receive(auth.organizationId, body, deps.maxBytes);
  } catch (err) {
    if (err instanceof WriteLimitExceeded) throw tooLarge(deps);
    throw err;
  }
}

/** @returns the 413 of an upload over MEDIA_MAX_BYTES. */
export function tooLarge(deps: MediaDeps): StorageLimitError {
  return new StorageLimitError(`Media exceeds the limit of ${deps.maxBytes} bytes (MEDIA_MAX_BYTES)`);
}

/** @returns an image's pixel size, read from its header. @throws 415 when the header does not decode. */
async function imageSize(content: Buffer, type: MediaType): Promise<{ width: number; height: number }> {
  // Loaded on first use: a process that never receives an image does not hold the library (about 19 MiB).
  const { default: sharp } = await import('sharp');
  try {
    const meta = await sharp(content).metadata();
    if (meta.width && meta.height) return { width: meta.width, height: meta.height };
  } catch {
    // below
  }
  throw unsupported(`The content is not a valid ${type.slice('image/'.length).toUpperCase()} image`);
}

/**
 * Makes a received file a medium of the caller's organization: its type read from its content and checked
 * against the claim, its hash taken, the file kept under the new id, then the record written.
 * @param deps storage.
 * @param auth the caller (its owner).
 * @param received the file from {@link receiveMedia} (removed when refused).
 * @param claim the file's name and the Content-Type the client gave it.
 * @returns the medium.
 * @throws UnsupportedMediaTypeError (415) when the content is of no accepted type or contradicts the claim.
 */
export async function createMedia(
  deps: MediaDeps,
  auth: AuthContext,
  received: ReceivedFile,
  claim: { name: string; contentType: string }
): Promise<MediaDoc> {
  const _id = newId('med');
  let kept = false;
  try {
    const name = cleanName(claim.name);
    const content = await deps.storage.content(received);
    let contentType: MediaType;
    try {
      contentType = detectMediaType(content, claim.contentType, name);
    } catch (err) {
      throw err instanceof MediaTypeRefused ? unsupported(err.message) : err;
    }
    const size = MEDIA_TYPES[contentType] === 'image' ? await imageSize(content, contentType) : {};
    const sha256 = createHash('sha256').update(content).digest('hex');
    await deps.storage.keep(received, _id);
    kept = true;
    return (await insertDocument(Media, {
      _id,
      organizationId: auth.organizationId,
      ownerId: auth.userId,
      name,
      contentType,
      size: content.length,
      sha256,
      ...size,
    })) as MediaDoc;
  } catch (err) {
    if (kept) await deps.storage.remove(auth.organizationId, _id).catch(() => undefined);
    else await deps.storage.discard(received);
    throw err;
  }
}

/**
 * @param auth the caller.
 * @param id medium id.
 * @returns the medium of the caller's organization.
 * @throws NotFoundError `Media not found` otherwise.
 */
export async function findMedia(auth: AuthContext, id: string): Promise<MediaDoc> {
  const media = await Media.findOne({ _id: id, organizationId: auth.organizationId }).lean<MediaDoc>();
  if (!media) throw new NotFoundError(NOT_FOUND);
  return media;
}

/**
 * @param auth the caller.
 * @param page limit and cursor.
 * @returns one page of the organization's media (newest first), the total and the next cursor.
 */
export async function listMedia(
  auth: AuthContext,
  page: { limit: number; cursor?: string }
): Promise<{ items: MediaDoc[]; total: number; nextCursor: string | null }> {
  const filter = { organizationId: auth.organizationId };
  const [{ items, nextCursor }, total] = await Promise.all([
    paginate<MediaDoc>(Media, filter, page),
    Media.countDocuments(filter),
  ]);
  return { items, total, nextCursor };
}

/**
 * @param deps storage.
 * @param auth the caller.
 * @param id medium id.
 * @returns the medium and its content.
 * @throws NotFoundError when it is not the organization's, or its file is gone (a delete in progress).
 */
export async function openMedia(
  deps: MediaDeps,
  auth: AuthContext,
  id: string
): Promise<{ media: MediaDoc; content: Readable }> {
  const media = await findMedia(auth, id);
  const content = await deps.storage.open(media.organizationId, media._id);
  if (!content) throw new NotFoundError(NOT_FOUND);
  return { media, content };
}

/**
 * Deletes a medium: its file, then its record (a delete cut between the two is finished by the next one; the
 * record without its file already answers 404 to downloads). Executions that referenced it and have not called
 * the model yet tell the model it is gone (commands/mediaTurn.ts).
 * @param deps storage.
 * @param auth the caller: the uploader, or an owner or admin of the organization.
 * @param id medium id.
 * @throws NotFoundError when it is not (or no longer) the organization's; ForbiddenError for other members.
 */
export async function deleteMedia(deps: MediaDeps, auth: AuthContext, id: string): Promise<void> {
  const media = await findMedia(auth, id);
  if (media.ownerId !== auth.userId && auth.role === 'member') throw new ForbiddenError();
  await deps.storage.remove(media.organizationId, media._id);
  await Media.deleteOne({ _id: media._id, organizationId: media.organizationId });
}

/**
 * Checks the media an execution references, before anything of it is stored.
 * @param auth the caller.
 * @param ids medium ids (validated: at most MAX_EXECUTION_MEDIA, no repeats).
 * @param field the field's name in the request, for the message.
 * @returns the media, in the order given.
 * @throws ValidationError for an id that is not a medium of the caller's organization, or media over
 * MAX_EXECUTION_MEDIA_BYTES together.
 */
export async function checkMediaIds(auth: AuthContext, ids: readonly string[], field: string): Promise<MediaDoc[]> {
  if (ids.length === 0) return [];
  const found = await Media.find({ $or: ids.map((_id) => ({ _id })) }).lean<MediaDoc[]>();
  const mine = new Map(found.filter((m) => m.organizationId === auth.organizationId).map((m) => [m._id, m]));
  const bad = ids.find((id) => !mine.has(id));
  if (bad !== undefined) throw new ValidationError(`Invalid ${field}: media ${bad} not found`);
  const media = ids.map((id) => mine.get(id)!);
  const bytes = media.reduce((n, m) => n + m.size, 0);
  if (bytes > MAX_EXECUTION_MEDIA_BYTES)
    throw new ValidationError(
      `Invalid ${field}: the media add up to ${bytes} bytes, more than the ${MAX_EXECUTION_MEDIA_BYTES} one execution may send`
    );
  return media;
}

/**
 * Checks that the execution's model can read its media: PDFs go only to Anthropic models (document blocks); the
 * OpenAI-compatible chat completions API has no form for them that its compatible servers share.
 * @param media the checked media.
 * @param provider the execution's provider.
 * @param field the field's name in the request, for the message.
 * @throws ValidationError otherwise.
 */
export function checkMediaForModel(media: MediaDoc[], provider: ResolvedModel['provider'], field: string): void {
  const pdf = media.find((m) => MEDIA_TYPES[m.contentType as MediaType] === 'document');
  if (pdf && provider === 'openai')
    throw new ValidationError(
      `Invalid ${field}: media ${pdf._id} is a PDF, which only Anthropic models read; this agent’s model is an OpenAI-compatible one`
    );
}

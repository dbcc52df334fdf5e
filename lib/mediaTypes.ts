/**
 * The media types /api/v1/media accepts, told by their content [docs/decisions.md "Media"]: images and PDFs by
 * their signature (magic bytes), text by being UTF-8 without NUL or other control characters. The client's claim
 * (the part's Content-Type, else the name's extension) must agree with what the content is; it only chooses among
 * the text types, which have no signature.
 */

/** Every type a medium may have, and how it reaches a model (commands/mediaTurn.ts). */
export const MEDIA_TYPES = {
  'image/png': 'image',
  'image/jpeg': 'image',
  'image/gif': 'image',
  'image/webp': 'image',
  'application/pdf': 'document',
  'text/plain': 'text',
  'text/markdown': 'text',
  'text/csv': 'text',
  'application/json': 'text',
} as const;
export type MediaType = keyof typeof MEDIA_TYPES;
export type MediaKind = (typeof MEDIA_TYPES)[MediaType];

/** How many first bytes {@link sniffSignature} needs. */
export const SIGNATURE_BYTES = 16;

const startsWith = (head: Buffer, bytes: number[], at = 0): boolean =>
  head.length >= at + bytes.length && bytes.every((b, i) => head[at + i] === b);
const ascii = (s: string): number[] => [...s].map((c) => c.charCodeAt(0));

/**
 * @param head the content's first bytes (at least {@link SIGNATURE_BYTES} when it has that many).
 * @returns the image or PDF type its signature says, or undefined.
 */
export function sniffSignature(head: Buffer): MediaType | undefined {
  if (startsWith(head, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) return 'image/png';
  if (startsWith(head, [0xff, 0xd8, 0xff])) return 'image/jpeg';
  if (startsWith(head, ascii('GIF87a')) || startsWith(head, ascii('GIF89a'))) return 'image/gif';
  if (startsWith(head, ascii('RIFF')) && startsWith(head, ascii('WEBP'), 8)) return 'image/webp';
  if (startsWith(head, ascii('%PDF-'))) return 'application/pdf';
  return undefined;
}

/**
 * @param content the whole content.
 * @returns whether it is text: UTF-8 (a byte-order mark allowed) without NUL or control characters other than tab,
 * line feed, form feed and carriage return.
 */
export function isText(content: Buffer): boolean {
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x08\x0b\x0e-\x1f\x7f]/.test(content.toString('latin1'))) return false;
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(content);
    return true;
  } catch {
    return false;
  }
}

/** Claims that say nothing about the content (the type is then the content's). */
const GENERIC = new Set(['', 'application/octet-stream', 'binary/octet-stream']);

/** Other names clients give the accepted types. */
const ALIASES: Record<string, MediaType> = {
  'image/jpg': 'image/jpeg',
  'image/pjpeg': 'image/jpeg',
  'text/x-markdown': 'text/markdown',
  'application/csv': 'text/csv',
  'text/json': 'application/json',
};

/** Text types by extension, for a generic claim. */
const TEXT_EXTENSIONS: Record<string, MediaType> = {
  md: 'text/markdown',
  markdown: 'text/markdown',
  csv: 'text/csv',
  json: 'application/json',
};

/** @returns the name's extension, lowercase (`''` when it has none). */
function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? '' : name.slice(dot + 1).toLowerCase();
}

/** @returns the claim without parameters, lowercase, with aliases resolved. */
function normalize(claim: string): string {
  const bare = claim.split(';')[0].trim().toLowerCase();
  return ALIASES[bare] ?? bare;
}

/** Why an upload's type is refused: 415 with this message. */
export class MediaTypeRefused extends Error {}

/**
 * Decides an upload's type from its content, checked against the client's claim.
 * @param content the whole content.
 * @param claim the part's Content-Type (`''` when none was sent).
 * @param name the file name (its extension picks the text type when the claim is generic).
 * @returns the type.
 * @throws MediaTypeRefused for content of no accepted type, a claim of a type not accepted, or a claim the content
 * contradicts.
 */
export function detectMediaType(content: Buffer, claim: string, name: string): MediaType {
  const claimed = normalize(claim);
  const generic = GENERIC.has(claimed);
  if (!generic && !(claimed in MEDIA_TYPES))
    throw new MediaTypeRefused(
      `Unsupported media type ${claimed}: accepted are ${Object.keys(MEDIA_TYPES).join(', ')}`
    );
  const signed = sniffSignature(content.subarray(0, SIGNATURE_BYTES));
  const text = signed === undefined && isText(content);
  if (!signed && !text)
    throw new MediaTypeRefused(
      'Unsupported content: not a PNG, JPEG, GIF, WebP or PDF file, nor UTF-8 text (the type is read from the content)'
    );
  const mismatch = (is: string): MediaTypeRefused =>
    new MediaTypeRefused(`The content does not match its declared type: declared ${claimed}, the content is ${is}`);
  if (signed) {
    if (!generic && claimed !== signed) throw mismatch(signed);
    return signed;
  }
  const type: MediaType = generic ? (TEXT_EXTENSIONS[extensionOf(name)] ?? 'text/plain') : (claimed as MediaType);
  if (MEDIA_TYPES[type] !== 'text') throw mismatch('text');
  if (type === 'application/json') {
    try {
      JSON.parse(content.toString('utf8').replace(/^\uFEFF/, ''));
    } catch {
      throw mismatch('text that is not valid JSON');
    }
  }
  return type;
}

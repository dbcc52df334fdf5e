/**
 * Content types of workspace files [docs/decisions.md "Workspace files"]: from the name's extension through the
 * `mime-types` database (with a few source-code extensions it maps to other things, such as `.ts` → video),
 * `text/plain` for other source files, `application/octet-stream` when unknown. Text types carry `charset=utf-8`. Also the code languages previews
 * name, whether a public answer is shown inline or downloaded, and what a file's preview holds.
 */
import { contentType, lookup } from 'mime-types';

/** Source files by extension → language name (previews' `language`). */
const CODE_LANGUAGES: Record<string, string> = {
  ts: 'typescript',
  tsx: 'typescript',
  mts: 'typescript',
  cts: 'typescript',
  js: 'javascript',
  jsx: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  py: 'python',
  rb: 'ruby',
  go: 'go',
  rs: 'rust',
  java: 'java',
  kt: 'kotlin',
  swift: 'swift',
  scala: 'scala',
  c: 'c',
  h: 'c',
  cc: 'cpp',
  cpp: 'cpp',
  hpp: 'cpp',
  cs: 'csharp',
  php: 'php',
  sh: 'shell',
  bash: 'shell',
  zsh: 'shell',
  sql: 'sql',
  html: 'html',
  htm: 'html',
  css: 'css',
  scss: 'scss',
  json: 'json',
  yaml: 'yaml',
  yml: 'yaml',
  toml: 'toml',
  xml: 'xml',
  lua: 'lua',
  r: 'r',
  pl: 'perl',
  vue: 'vue',
  svelte: 'svelte',
};

/** Extensions whose `mime-types` answer is not the source file's. */
const OVERRIDES: Record<string, string> = {
  ts: 'text/x-typescript',
  tsx: 'text/x-typescript',
  mts: 'text/x-typescript',
  cts: 'text/x-typescript',
};

function extensionOf(name: string): string {
  const dot = name.lastIndexOf('.');
  return dot <= 0 ? '' : name.slice(dot + 1).toLowerCase();
}

/**
 * @param name a file name or path.
 * @returns the media type without parameters.
 */
export function mediaTypeOf(name: string): string {
  const ext = extensionOf(name.split('/').pop() ?? name);
  return OVERRIDES[ext] ?? (lookup(name) || (CODE_LANGUAGES[ext] ? 'text/plain' : 'application/octet-stream'));
}

/**
 * @param mediaType a media type without parameters.
 * @returns the Content-Type header value (text gets `charset=utf-8`).
 */
export function contentTypeHeader(mediaType: string): string {
  if (mediaType.startsWith('text/') && !mediaType.includes('charset')) return `${mediaType}; charset=utf-8`;
  return contentType(mediaType) || mediaType;
}

/**
 * @param name a file name.
 * @returns the programming language of a source file, or undefined.
 */
export function codeLanguageOf(name: string): string | undefined {
  return CODE_LANGUAGES[extensionOf(name.split('/').pop() ?? name)];
}

/** @returns whether the name is a Markdown file. */
export function isMarkdown(name: string): boolean {
  return ['md', 'markdown', 'mdx'].includes(extensionOf(name));
}

/** Media types a public share shows in the browser; anything else (HTML, SVG, scripts, unknown) is downloaded. */
const INLINE = [/^image\/(png|jpeg|gif|webp|avif|bmp)$/, /^text\/plain$/, /^application\/pdf$/, /^(audio|video)\//];

/**
 * @param mediaType the file's media type.
 * @returns `inline` for types that are safe to show, else `attachment`.
 */
export function dispositionFor(mediaType: string): 'inline' | 'attachment' {
  return INLINE.some((re) => re.test(mediaType)) ? 'inline' : 'attachment';
}

/** What a file is shown as in a preview (commands/filePreview.ts). */
export type PreviewKind = 'text' | 'markdown' | 'code' | 'image' | 'binary';

/** A file's preview: its metadata, and its first text or an image's size and thumbnail. */
export interface Preview {
  path: string;
  name: string;
  size: number;
  modifiedAt: Date;
  contentType: string;
  kind: PreviewKind;
  language?: string;
  text?: string;
  truncated?: boolean;
  image?: { format: string; width: number; height: number };
  thumbnail?: { contentType: string; width: number; height: number; base64: string };
}

/**
 * Schema fragments shared by both surfaces' route declarations.
 */
import type { Schema } from '../lib/ajv';
import { pageQueryProperties } from '../lib/pagination';

/** A string with a length cap (every string field has one, ARCHITECTURE.md §8). */
export const str = (maxLength: number, extra: Schema = {}): Schema => ({ type: 'string', maxLength, ...extra });
/** A required string: present and non-empty. */
export const requiredStr = (maxLength: number, extra: Schema = {}): Schema => ({
  type: 'string',
  minLength: 1,
  maxLength,
  ...extra,
});
/** An array of capped strings. */
export const strArray = (maxItems = 100, maxLength = 200): Schema => ({
  type: 'array',
  maxItems,
  items: { type: 'string', maxLength },
});
/**
 * An array that names each item at most once (a repeat is refused with a message saying so).
 * @param items the items' schema.
 * @param maxItems the length cap.
 * @param description what the list holds.
 */
export const distinctList = (items: Schema, maxItems: number, description: string): Schema => ({
  type: 'array',
  maxItems,
  uniqueItems: true,
  items,
  'x-message': 'Field {field} must not list an item twice',
  description,
});
/**
 * Ids of records of the organization (skills, MCP server instances, media), each at most once.
 * @param maxItems the length cap.
 * @param description what the ids name.
 */
export const idList = (maxItems: number, description: string): Schema =>
  distinctList({ type: 'string', minLength: 1, maxLength: 100 }, maxItems, description);
/** Lowercase words of letters and digits joined by single hyphens (`web-research`): skill and MCP server names. */
export const KEBAB_CASE = '^[a-z0-9]+(?:-[a-z0-9]+)*$';
/**
 * A kebab-case name (skills, the MCP server instances skills name).
 * @param maxLength the length cap.
 * @param what what the name names, for the error message.
 * @param extra more keywords (a description).
 */
export const kebabName = (maxLength: number, what: string, extra: Schema = {}): Schema => ({
  type: 'string',
  minLength: 1,
  maxLength,
  pattern: KEBAB_CASE,
  'x-message': `Invalid {field}: ${what} is kebab-case (lowercase letters and digits, words joined by single hyphens, e.g. web-research)`,
  ...extra,
});
/**
 * A field holding a URL: an absolute `http:` or `https:` URL with a host, nothing else (no `javascript:`, `data:`,
 * `file:` …) [docs/decisions.md "URLs"]. Every URL field of a request schema uses this one helper.
 */
export const httpUrl = (maxLength = 2000): Schema => ({
  type: 'string',
  maxLength,
  format: 'uri',
  pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\\s]+',
  'x-message': 'Field {field} must be an http or https URL',
});
/**
 * A string that must be one of a fixed list, refused with the list when it is not (status filters and the like).
 * @param values the accepted values.
 * @param what the field as the message names it (`status`, `schedule.type`).
 * @param extra more keywords (a description).
 */
export const oneOfStrings = (values: readonly string[], what: string, extra: Schema = {}): Schema => ({
  type: 'string',
  enum: [...values],
  'x-message': `Invalid ${what}. Must be: ${values.join(', ')}`,
  ...extra,
});
/** The `error` of a record that may have failed: null, or its message and code. */
export const nullableError: Schema = {
  oneOf: [{ type: 'null' }, record({ message: { type: 'string' }, code: { type: 'string' } })],
};
/** ISO 8601 timestamp in responses. */
export const timestamp: Schema = { type: 'string', format: 'date-time' };
export const nullableTimestamp: Schema = { type: ['string', 'null'], format: 'date-time' };
export const nullableStr: Schema = { type: ['string', 'null'] };

/** `{ id }` path parameters. */
export const idParams: Schema = {
  type: 'object',
  required: ['id'],
  properties: { id: { type: 'string', minLength: 1, maxLength: 100 } },
};

/** limit + cursor query. */
export const pageQuery = (extra: Record<string, Schema> = {}): Schema => ({
  type: 'object',
  additionalProperties: false,
  properties: { ...pageQueryProperties, ...extra },
});

/** `{success, message}` responses. */
export const successMessage: Schema = {
  type: 'object',
  additionalProperties: false,
  required: ['success', 'message'],
  properties: { success: { type: 'boolean' }, message: { type: 'string' } },
};

/**
 * An object schema whose listed fields are all required.
 * @param properties the fields.
 * @param optional names of fields that may be absent.
 * @returns the schema (no other fields allowed).
 */
export function record(properties: Record<string, Schema>, optional: string[] = []): Schema {
  return {
    type: 'object',
    additionalProperties: false,
    required: Object.keys(properties).filter((k) => !optional.includes(k)),
    properties,
  };
}

/**
 * The `expired` event every stream may carry (commands/eventLog.ts `readEvents`; docs/decisions.md "Retention"), listed
 * with each stream's own events.
 */
export const expiredEvent: Schema = {
  ...record({
    from: { type: 'integer', minimum: 1 },
    to: { type: 'integer', minimum: 1 },
    message: { type: 'string' },
  }),
  description:
    'Stands for the events from `from` to `to`, which expired (STREAM_EVENT_RETENTION, 30 days by default); its id is `to`, so a client resuming from it continues with the first event still kept. When the stream’s last event expired and its subject has ended, it ends the stream.',
};

/** nextCursor of list responses. */
export const nextCursor: Schema = { type: ['string', 'null'] };

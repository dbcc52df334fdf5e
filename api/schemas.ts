/**
 * Schema fragments shared by both surfaces' route declarations.
 */
import type { FromSchema, JSONSchema } from 'json-schema-to-ts';
import type { Schema } from '../lib/ajv';
import { pageQueryProperties } from '../lib/pagination';

/**
 * The type of what a request schema lets through, derived from the schema itself (json-schema-to-ts): fields with a
 * `default` are present (ajv fills them in), the others optional unless `required`. `Otherwise` when there is no
 * schema (a route that declares none).
 */
export type Validated<S, Otherwise = unknown> = [S] extends [JSONSchema] ? FromSchema<S> : Otherwise;

/**
 * The helpers below return their schemas with literal types (`as const`): a route's input type is derived from its
 * request schemas (api/route.ts `route`, json-schema-to-ts), so what they build must stay visible to the compiler.
 */
type NoKeywords = Record<never, never>;

/** A string with a length cap (every string field has one, docs/architecture.md §8). */
export const str = <const E extends Schema = NoKeywords>(maxLength: number, extra: E = {} as E) =>
  ({ type: 'string', maxLength, ...extra }) as const;
/** A required string: present and non-empty. */
export const requiredStr = <const E extends Schema = NoKeywords>(maxLength: number, extra: E = {} as E) =>
  ({
    type: 'string',
    minLength: 1,
    maxLength,
    ...extra,
  }) as const;
/** An array of capped strings. */
export const strArray = (maxItems = 100, maxLength = 200) =>
  ({
    type: 'array',
    maxItems,
    items: { type: 'string', maxLength },
  }) as const;
/**
 * An array that names each item at most once (a repeat is refused with a message saying so).
 * @param items the items' schema.
 * @param maxItems the length cap.
 * @param description what the list holds.
 */
export const distinctList = <const I extends Schema>(items: I, maxItems: number, description: string) =>
  ({
    type: 'array',
    maxItems,
    uniqueItems: true,
    items,
    'x-message': 'Field {field} must not list an item twice',
    description,
  }) as const;
/**
 * Ids of records of the organization (skills, MCP server instances, media), each at most once.
 * @param maxItems the length cap.
 * @param description what the ids name.
 */
export const idList = (maxItems: number, description: string) =>
  distinctList({ type: 'string', minLength: 1, maxLength: 100 }, maxItems, description);
/** Lowercase words of letters and digits joined by single hyphens (`web-research`): skill and MCP server names. */
export const KEBAB_CASE = '^[a-z0-9]+(?:-[a-z0-9]+)*$';
/**
 * A kebab-case name (skills, the MCP server instances skills name).
 * @param maxLength the length cap.
 * @param what what the name names, for the error message.
 * @param extra more keywords (a description).
 */
export const kebabName = <const E extends Schema = NoKeywords>(maxLength: number, what: string, extra: E = {} as E) =>
  ({
    type: 'string',
    minLength: 1,
    maxLength,
    pattern: KEBAB_CASE,
    'x-message': `Invalid {field}: ${what} is kebab-case (lowercase letters and digits, words joined by single hyphens, e.g. web-research)`,
    ...extra,
  }) as const;
/**
 * A field holding a URL: an absolute `http:` or `https:` URL with a host, nothing else (no `javascript:`, `data:`,
 * `file:` …) [docs/decisions.md "URLs"]. Every URL field of a request schema uses this one helper.
 */
export const httpUrl = (maxLength = 2000) =>
  ({
    type: 'string',
    maxLength,
    format: 'uri',
    pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^/?#\\s]+',
    'x-message': 'Field {field} must be an http or https URL',
  }) as const;
/**
 * A string that must be one of a fixed list, refused with the list when it is not (status filters and the like).
 * @param values the accepted values.
 * @param what the field as the message names it (`status`, `schedule.type`).
 * @param extra more keywords (a description).
 */
export const oneOfStrings = <const V extends string, const E extends Schema = NoKeywords>(
  values: readonly V[],
  what: string,
  extra: E = {} as E
) =>
  ({
    type: 'string',
    enum: [...values],
    'x-message': `Invalid ${what}. Must be: ${values.join(', ')}`,
    ...extra,
  }) as const;
/** The `error` of a record that may have failed: null, or its message and code. */
export const nullableError: Schema = {
  oneOf: [{ type: 'null' }, record({ message: { type: 'string' }, code: { type: 'string' } })],
};
/** ISO 8601 timestamp in responses. */
export const timestamp: Schema = { type: 'string', format: 'date-time' };
export const nullableTimestamp: Schema = { type: ['string', 'null'], format: 'date-time' };
export const nullableStr: Schema = { type: ['string', 'null'] };

const pathParam = { type: 'string', minLength: 1, maxLength: 100 } as const;
/**
 * Path parameters, each a required non-empty string.
 * @param names the parameters' names.
 */
export const pathParams = <const N extends string>(...names: N[]) =>
  ({
    type: 'object',
    required: names,
    properties: Object.fromEntries(names.map((name) => [name, pathParam])) as Record<N, typeof pathParam>,
  }) as const;

/** `{ id }` path parameters. */
export const idParams = pathParams('id');

/** limit + cursor query. */
export const pageQuery = <const X extends Record<string, Schema> = NoKeywords>(extra: X = {} as X) =>
  ({
    type: 'object',
    additionalProperties: false,
    properties: { ...pageQueryProperties, ...extra },
  }) as const;

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
export function record<const P extends Record<string, Schema>, const O extends keyof P & string = never>(
  properties: P,
  optional: readonly O[] = []
) {
  return {
    type: 'object',
    additionalProperties: false,
    required: Object.keys(properties).filter((k) => !optional.includes(k as O)) as Exclude<keyof P & string, O>[],
    properties,
  } as const;
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

/**
 * The JSON Schema validators (compiled once per schema). Bodies are validated strictly (no coercion, unknown
 * fields refused); query strings are coerced (`?limit=10` → 10). Errors become one client-readable message in the
 * spec's wording (`Missing required field: name`); a schema can carry its own message for a failing enum or
 * pattern with the `x-message` annotation (`{field}` in it is replaced by the field's path).
 */
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';

function build(coerceTypes: boolean): Ajv {
  const ajv = new Ajv({ allErrors: false, coerceTypes, useDefaults: true, strict: true, verbose: true });
  addFormats(ajv);
  ajv.addKeyword({ keyword: 'x-message', schemaType: 'string' });
  return ajv;
}

const bodyAjv = build(false);
const queryAjv = build(true);
const cache = new WeakMap<object, ValidateFunction>();

/** A JSON Schema object (also fed to the OpenAPI document). */
export type Schema = Record<string, unknown>;

function fieldOf(error: ErrorObject): string {
  const path = error.instancePath.replace(/^\//, '').replace(/\//g, '.');
  return path;
}

/**
 * Turns the first ajv error into one sentence.
 * @param error the ajv error.
 * @returns the message.
 */
export function describeError(error: ErrorObject): string {
  const field = fieldOf(error);
  const annotation = (error.parentSchema as Schema | undefined)?.['x-message'];
  const custom = typeof annotation === 'string' ? annotation.replace('{field}', field || '(body)') : undefined;
  switch (error.keyword) {
    case 'required':
      return `Missing required field: ${field ? `${field}.` : ''}${(error.params as { missingProperty: string }).missingProperty}`;
    case 'additionalProperties':
      return `Unknown field: ${field ? `${field}.` : ''}${(error.params as { additionalProperty: string }).additionalProperty}`;
    case 'type':
      return `Invalid type for field: ${field || '(body)'} (expected ${(error.params as { type: string }).type})`;
    case 'minLength':
      // Required strings carry minLength 1: an empty value counts as a missing one.
      if ((error.params as { limit: number }).limit === 1) return `Missing required field: ${field}`;
      return `Field ${field} must be at least ${(error.params as { limit: number }).limit} characters`;
    case 'maxLength':
      return `Field ${field} must be at most ${(error.params as { limit: number }).limit} characters`;
    case 'maxItems':
      return `Field ${field} must have at most ${(error.params as { limit: number }).limit} items`;
    case 'maxProperties':
      return `Field ${field} must have at most ${(error.params as { limit: number }).limit} entries`;
    case 'minimum':
    case 'maximum':
      return `Field ${field} must be ${error.keyword === 'minimum' ? '>=' : '<='} ${(error.params as { limit: number }).limit}`;
    case 'enum':
      if (typeof custom === 'string') return custom;
      return `Invalid value for field: ${field}. Must be: ${((error.params as { allowedValues: unknown[] }).allowedValues ?? []).join(', ')}`;
    default:
      if (typeof custom === 'string') return custom;
      return `Invalid value for field: ${field || '(body)'}${error.message ? ` (${error.message})` : ''}`;
  }
}

/**
 * Characters no string of a request may hold [docs/decisions.md "Security"]: C0 controls but tab, line feed and
 * carriage return; DEL and the C1 controls (U+0080–U+009F, U+0085 included); unpaired UTF-16 surrogates (not
 * encodable as UTF-8, so the store refuses them).
 */
const FORBIDDEN =
  // eslint-disable-next-line no-control-regex
  /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * @param value a request value (body, query, parameters, tool arguments).
 * @param path the path of `value` (dotted, as in the other messages).
 * @returns the path of the first string or key holding a forbidden character, or undefined.
 */
function controlCharacterAt(value: unknown, path: string): string | undefined {
  if (typeof value === 'string') return FORBIDDEN.test(value) ? path : undefined;
  if (!value || typeof value !== 'object') return undefined;
  for (const [key, item] of Object.entries(value)) {
    const at = path ? `${path}.${key}` : key;
    if (FORBIDDEN.test(key)) return at;
    const found = controlCharacterAt(item, at);
    if (found !== undefined) return found;
  }
  return undefined;
}

/**
 * Refuses control characters anywhere in a request value; every surface validates through {@link check}, so this is
 * the one place [issue 30 point 9].
 * @param value the value.
 * @returns the message naming the field, or undefined.
 */
export function checkCharacters(value: unknown): string | undefined {
  const at = controlCharacterAt(value, '');
  return at === undefined ? undefined : `Field ${at || '(body)'} must not contain control characters`;
}

/**
 * Validates (and, for queries, coerces and defaults) a value in place. Strings holding control characters are
 * refused first ({@link checkCharacters}).
 * @param schema the schema.
 * @param value the value.
 * @param kind `body` (strict) or `query` (coercing).
 * @returns undefined when valid, else the message of the first error.
 */
export function check(schema: Schema, value: unknown, kind: 'body' | 'query' = 'body'): string | undefined {
  let validate = cache.get(schema);
  if (!validate) {
    validate = (kind === 'query' ? queryAjv : bodyAjv).compile(schema);
    cache.set(schema, validate);
  }
  const characters = checkCharacters(value);
  if (characters) return characters;
  if (validate(value)) return undefined;
  const first = validate.errors?.[0];
  return first ? describeError(first) : 'Invalid request';
}

const responseAjv = new Ajv({ allErrors: true, strict: false });
addFormats(responseAjv);
const responseCache = new WeakMap<object, ValidateFunction>();

/**
 * Validates without defaults or coercion (responses, where the value must not change).
 * @param schema the schema.
 * @param value the value.
 * @returns undefined when valid, else every error as text.
 */
export function checkResponse(schema: Schema, value: unknown): string | undefined {
  let validate = responseCache.get(schema);
  if (!validate) {
    validate = responseAjv.compile(schema);
    responseCache.set(schema, validate);
  }
  return validate(value) ? undefined : responseAjv.errorsText(validate.errors);
}

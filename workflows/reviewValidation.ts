/**
 * Validation of a review's payloads against their declared JSON Schemas, with ajv: in the job workflow's update
 * validators (workflows/job.ts), and at job creation for the declared schemas themselves (commands/jobs.ts), with
 * the same options, so a schema accepted at creation is one the workflow compiles. Deterministic (no I/O, no
 * clock); compiled validators are kept per workflow run, never shared across runs.
 */
import type Ajv from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { BUILTIN_REVIEW_SCHEMAS, type BuiltinReviewAction, type ReviewSpec } from './reviews';

/**
 * A fresh ajv: strict (unknown keywords refused), all formats of JSON Schema draft 2020-12's core, no coercion. ajv
 * (about 240 modules) is loaded on first use: in the workflow sandbox every workflow run evaluates the modules its
 * code imports, and only a job that validates a payload needs it.
 */
function newAjv(): Ajv {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on first use (see above)
  const { default: AjvClass } = require('ajv') as { default: typeof Ajv };
  return new AjvClass({
    allErrors: false,
    strict: true,
    validateFormats: false,
    coerceTypes: false,
    useDefaults: false,
  });
}

/** @returns one sentence for ajv's first error, naming the payload's field. */
function describe(action: string, error: ErrorObject | undefined): string {
  if (!error) return `Invalid payload for ${action}`;
  const field = error.instancePath.replace(/^\//, '').replace(/\//g, '.');
  if (error.keyword === 'required')
    return `Invalid payload for ${action}: missing required field ${[field, (error.params as { missingProperty: string }).missingProperty].filter(Boolean).join('.')}`;
  if (error.keyword === 'additionalProperties')
    return `Invalid payload for ${action}: unknown field ${[field, (error.params as { additionalProperty: string }).additionalProperty].filter(Boolean).join('.')}`;
  if (error.keyword === 'enum')
    return `Invalid payload for ${action}: ${field || 'payload'} must be one of ${((error.params as { allowedValues: unknown[] }).allowedValues ?? []).map((v) => JSON.stringify(v)).join(', ')}`;
  return `Invalid payload for ${action}: ${field || 'payload'} ${error.message ?? 'is invalid'}`;
}

/**
 * @param schema a declared payload schema.
 * @returns why ajv refuses to compile it, or null when it compiles.
 */
export function schemaProblem(schema: unknown): string | null {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'must be a JSON Schema object';
  try {
    newAjv().compile(schema as Record<string, unknown>);
    return null;
  } catch (err) {
    return err instanceof Error ? err.message : String(err);
  }
}

/**
 * The payload validator of one job: built-in actions' schemas and the declared ones, compiled on first use.
 * @param spec the job's review declaration (absent: built-in actions only).
 * @returns `check(action, payload)`: null when valid, else the error sentence; undefined when the action is not
 *   one the job declares.
 */
export function reviewPayloadChecker(
  spec: ReviewSpec | null | undefined
): (action: string, payload: unknown) => string | null | undefined {
  let ajv: Ajv | undefined; // made on first use: most jobs never validate a payload in a given run (replays)
  const compiled = new Map<string, ValidateFunction>();
  return (action, payload) => {
    let validate = compiled.get(action);
    if (!validate) {
      const schema =
        (BUILTIN_REVIEW_SCHEMAS as Record<string, Record<string, unknown> | undefined>)[
          action as BuiltinReviewAction
        ] ?? spec?.actions.find((a) => a.name === action)?.schema;
      if (!schema) return undefined;
      validate = (ajv ??= newAjv()).compile(schema);
      compiled.set(action, validate);
    }
    return validate(payload) ? null : describe(action, validate.errors?.[0]);
  };
}

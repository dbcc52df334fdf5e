/**
 * Every request field that holds a URL (named `…Url`, `…Uri`, `…Href`, or `url`) is declared with the one shared
 * helper, httpUrl(), so none accepts `javascript:` and friends (docs/decisions.md "URLs"). Walks the route
 * declarations of every route group (the same ones the routers and the OpenAPI document are built from).
 */
import { routeGroups } from '../../api/app';
import type { AppDeps } from '../../api/deps';
import { httpUrl } from '../../api/schemas';
import type { Schema } from '../../lib/ajv';
import { check } from '../../lib/ajv';
import { testConfig } from '../helpers/env';

const URL_NAME = /(^url$|url$|uri$|href$)/i;

function urlFields(schema: unknown, path: string, out: Array<{ path: string; schema: Schema }>): void {
  if (schema === null || typeof schema !== 'object') return;
  const s = schema as Schema;
  const properties = (s.properties ?? {}) as Record<string, Schema>;
  for (const [name, value] of Object.entries(properties)) {
    if (URL_NAME.test(name)) out.push({ path: `${path}.${name}`, schema: value });
    urlFields(value, `${path}.${name}`, out);
  }
  for (const key of ['items', 'additionalProperties']) urlFields(s[key], `${path}[]`, out);
  for (const key of ['anyOf', 'oneOf', 'allOf'])
    for (const sub of (s[key] as unknown[]) ?? []) urlFields(sub, path, out);
}

describe('URL fields', () => {
  const deps = { config: testConfig() } as unknown as AppDeps;
  const routes = routeGroups(deps, () => {
    throw new Error('not served here');
  }).flatMap((g) => g.routes);
  const fields: Array<{ path: string; schema: Schema }> = [];
  for (const r of routes) {
    urlFields(r.body, `${r.method.toUpperCase()} ${r.path} body`, fields);
    urlFields(r.query, `${r.method.toUpperCase()} ${r.path} query`, fields);
  }

  it('there is at least one (the profile avatarUrl)', () => {
    expect(fields.map((f) => f.path)).toContain('PATCH /profile body.avatarUrl');
  });

  it('every one is declared with httpUrl()', () => {
    const { maxLength: _ignored, ...shape } = httpUrl();
    for (const f of fields) expect({ path: f.path, ...f.schema }).toMatchObject({ path: f.path, ...shape });
  });

  it('httpUrl() accepts only absolute http: and https: URLs', () => {
    const schema = { type: 'object', properties: { u: httpUrl(100) } };
    expect(check(schema, { u: 'https://example.com/a?b#c' })).toBeUndefined();
    expect(check(schema, { u: 'HTTP://example.com' })).toBeUndefined();
    for (const bad of ['javascript:alert(1)', 'vbscript:x', 'data:,x', 'mailto:a@b.c', '/relative', 'http://'])
      expect(check(schema, { u: bad })).toBe('Field u must be an http or https URL');
  });
});
